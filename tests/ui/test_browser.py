"""The UI in real headless Chromium (Debian's, driven by Playwright): approve an edit end to
end, reject one, label three traces, open a trace with a script payload, roll back a release;
a full-page screenshot of every page goes to $HATKIT_UI_SCREENSHOTS (default
runs/ui-screenshots/). Skips without chromium or playwright, except under CI=true, where a
missing browser fails the run instead of silently skipping it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from uikit import SKILL, Runs, confirm_and_apply, make_runs

from hatkit.evolve.journal import Journal
from hatkit.evolve.release import list_releases
from hatkit.judge.labels import load_labels
from hatkit.sim.tool_server import running_app
from hatkit.ui import UIConfig, create_app

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(os.environ.get("HATKIT_UI_SCREENSHOTS")
             or Path(__file__).resolve().parents[2] / "runs" / "ui-screenshots")


def _missing() -> str | None:
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing (run scripts/install_browser.sh .venv)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed (run scripts/install_browser.sh .venv)"
    return None


def require_browser() -> None:
    """Skip without a browser; under CI=true fail instead, so CI cannot silently skip."""
    if why := _missing():
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests cannot run under CI: {why}")
        pytest.skip(why)


def test_missing_browser_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(f"{__name__}.CHROMIUM", Path("/nonexistent/chromium"))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cannot run under CI"):
        require_browser()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="install_browser"):
        require_browser()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield b
        b.close()


@pytest.fixture
def runs(tmp_path: Path, minimal_harness: Path) -> Runs:
    return make_runs(tmp_path, minimal_harness)


@pytest.fixture
def site(browser: Any, runs: Runs) -> Iterator[tuple[Any, str]]:
    """A fresh browser context on the app over `runs`, and the app's base URL."""
    app = create_app(UIConfig(runs.root, harness=runs.harness))
    with running_app(app) as url:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15_000)
        yield page, url
        context.close()


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_approve_one_edit_end_to_end(site: tuple[Any, str], runs: Runs, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    page, url = site
    edit = runs.edits[0]
    outcome: list[Any] = []
    loop = threading.Thread(target=lambda: outcome.append(
        confirm_and_apply(Journal(runs.journal), runs.harness, edit, tmp_path)))
    loop.start()  # the evolution loop, waiting at the Confirm gate
    page.goto(f"{url}/review")
    expect(page.locator(f"#edit-{edit} .diff .add").first).to_contain_text("currency")
    shot(page, "review")
    page.fill(f"#by-{edit}", "ana")
    page.fill(f"#comment-{edit}", "clear win on greet")
    page.click(f"#edit-{edit} button[value=approve]")
    expect(page.locator("#done")).to_contain_text("approved")
    shot(page, "review-after-approve")
    loop.join(timeout=60)
    assert outcome and outcome[0].decision == "approve" and outcome[0].by == "ui:ana"
    assert "Always say the price with its currency." in (runs.harness / SKILL).read_text()
    assert f"evolve-{edit}" in [r.name for r in list_releases(runs.harness)]
    page.goto(f"{url}/releases")
    expect(page.locator("table")).to_contain_text(f"evolve-{edit}")


def test_approve_with_the_real_evolution_loop(browser: Any, tmp_path: Path) -> None:
    """The loop proposes, evaluates and waits at the gate; the page approves; it releases."""
    from evolvekit import DISABLED, defective_harness, waiting_loop
    from playwright.sync_api import expect

    harness = defective_harness(tmp_path)
    runs_dir = tmp_path / "runs"
    loop = waiting_loop(harness, runs_dir / "evolve-1")
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(loop.run()), daemon=True)
    worker.start()
    journal = Journal(runs_dir / "evolve-1" / "journal.jsonl")
    deadline = time.monotonic() + 60
    while worker.is_alive() and time.monotonic() < deadline and not any(
            p.dev_delta is not None for p in journal.pending()):
        time.sleep(0.1)  # until evaluated and waiting at the gate
    pending = journal.pending()
    assert len(pending) == 1 and pending[0].dev_delta is not None and pending[0].dev_delta > 0
    edit = pending[0].edit_id
    with running_app(create_app(UIConfig(runs_dir, harness=harness))) as url:
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.goto(f"{url}/review")
        expect(page.locator(f"#edit-{edit} .diff .add")).to_contain_text(DISABLED)
        shot(page, "review-real-loop")
        page.fill(f"#by-{edit}", "ana")
        page.click(f"#edit-{edit} button[value=approve]")
        expect(page.locator("#done")).to_contain_text("approved")
        worker.join(timeout=120)
        assert result and len(result[0].releases) == 1
        assert DISABLED in (harness / "harness.yaml").read_text()
        assert journal.decision_for(edit)["by"] == "ui:ana"  # type: ignore[index]
        assert journal.records("release")
        page.goto(f"{url}/releases")
        expect(page.locator("table")).to_contain_text(result[0].releases[0])
        shot(page, "releases-after-real-loop")
        context.close()


def test_reject_another_edit(site: tuple[Any, str], runs: Runs) -> None:
    from playwright.sync_api import expect

    page, url = site
    edit = runs.edits[1]
    before = (runs.harness / "harness.yaml").read_text()
    page.goto(f"{url}/review")
    page.fill(f"#by-{edit}", "bo")
    page.fill(f"#comment-{edit}", "too aggressive")
    page.click(f"#edit-{edit} button[value=reject]")
    expect(page.locator("#done")).to_contain_text("rejected")
    rec = Journal(runs.journal).decision_for(edit)
    assert rec is not None and rec["decision"] == "reject" and rec["comment"] == "too aggressive"
    assert (runs.harness / "harness.yaml").read_text() == before
    assert [p.edit_id for p in Journal(runs.journal).pending()] == [runs.edits[0]]


def test_edit_the_text_and_approve(site: tuple[Any, str], runs: Runs) -> None:
    from playwright.sync_api import expect

    page, url = site
    edit = runs.edits[0]
    page.goto(f"{url}/review")
    editor = page.locator(f"#editor-{edit} textarea")
    expect(editor).to_be_hidden()
    page.click(f"#edit-{edit} button[data-toggle]")
    expect(editor).to_be_visible()
    text = editor.input_value()
    assert text.endswith("Always say the price with its currency.\n")
    editor.fill(text.replace("Always say", "Always state"))
    shot(page, "review-edit-text")
    page.fill(f"#by-{edit}", "ana")
    page.click(f"#edit-{edit} button[value=approve_edited]")
    expect(page.locator("#done")).to_contain_text("approved with edits")
    rec = Journal(runs.journal).decision_for(edit)
    assert rec is not None and rec["edited"][SKILL] == text.replace("Always say", "Always state")


def test_label_three_traces(site: tuple[Any, str], runs: Runs) -> None:
    from playwright.sync_api import expect

    page, url = site
    page.goto(f"{url}/labels")
    shot(page, "labels-overview")
    page.fill("#annotator", "ann")
    page.select_option("#file", runs.traces)
    page.click("text=Start labelling")
    for i in range(3):
        expect(page.locator("#label-form")).to_be_visible()
        assert page.locator("text=programmatic:test").count() == 0  # verdict hidden until saved
        if i == 0:
            shot(page, "label-trace")
        page.check("input[name=accuracy][value='1']")
        page.check(f"input[name=effectiveness][value='{i % 2}']")
        page.fill("#note", f"note {i}")
        page.click("text=Save label")
        expect(page.locator("#mine")).to_contain_text("ann")
        expect(page.locator("body")).to_contain_text("programmatic:test")  # now shown
        if i == 0:
            shot(page, "label-saved")
        page.click("#next")
    expect(page.locator("h1")).to_contain_text("3 of 5 done")
    labels = load_labels(runs.root / "labels.jsonl")
    assert [(x.trace_id, x.dimension, x.label) for x in labels] == [
        (t, d, v) for i, t in enumerate(runs.trace_ids[:3])
        for d, v in (("accuracy", 1), ("effectiveness", i % 2))]
    assert {x.annotator for x in labels} == {"ann"}


def test_script_payload_is_inert(site: tuple[Any, str], runs: Runs) -> None:
    page, url = site
    dialogs: list[str] = []

    def on_dialog(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    for name, path in (("trace", f"/trace?file={runs.traces}&id={runs.hostile_id}"),
                       ("traces", f"/traces?file={runs.traces}"),
                       ("label-hostile", f"/label?file={runs.traces}&id={runs.hostile_id}&annotator=ann")):
        page.goto(url + path)
        page.wait_for_load_state("load")
        page.wait_for_timeout(300)
        assert dialogs == []
        assert page.evaluate("window.__pwned") is None
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        scripts = page.evaluate("[...document.scripts].map(s => s.getAttribute('src'))")
        assert scripts == ["/static/app.js"]
        assert "<script>window.__pwned = 1;" in page.inner_text("main")
        shot(page, name)


def test_roll_back_a_release(site: tuple[Any, str], runs: Runs) -> None:
    from playwright.sync_api import expect

    page, url = site
    page.goto(f"{url}/releases")
    page.select_option("#a", "r1")
    page.select_option("#b", "r2")
    page.click("text=Show diff")
    expect(page.locator("#release-diff")).to_contain_text("70")
    shot(page, "releases-diff")
    page.click("tr:has-text('r1') >> text=roll back to this")
    expect(page.locator("h1")).to_contain_text("Roll back to r1?")
    shot(page, "rollback-confirm")
    page.check("input[name=confirm]")
    page.click("#do-rollback")
    expect(page.locator("#done")).to_contain_text("rolled back to r1")
    assert "free_shipping_threshold: 60" in (runs.harness / "harness.yaml").read_text()


def test_screenshots_of_the_reading_pages(site: tuple[Any, str], runs: Runs) -> None:
    from playwright.sync_api import expect

    page, url = site
    from hatkit.harness import load_harness

    for name, path in (("runs", "/"), ("run", "/run?name=demo-1"),
                       ("trace-ok", f"/trace?file={runs.traces}&id=ep-1"),
                       ("harness-version", f"/harness/{load_harness(runs.harness).content_hash}")):
        page.goto(url + path)
        expect(page.locator("h1")).to_be_visible()
        shot(page, name)
    page.goto(f"{url}/run?name=demo-1")
    frame = page.frame_locator("iframe.report")
    expect(frame.locator("h1")).to_contain_text("Report")

"""The UI without a browser: escaping of untrusted text, CSRF, the token, the host check,
double approval, labels, releases, and that no path leaves the runs folder."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from uiclient import client, csrf_of
from uikit import SKILL, Runs, make_runs

from hatkit.evolve.journal import Journal
from hatkit.judge.labels import load_labels


@pytest.fixture
def runs(tmp_path: Path, minimal_harness: Path) -> Runs:
    return make_runs(tmp_path, minimal_harness)


@pytest.fixture
def c(runs: Runs) -> TestClient:
    return client(runs)


def test_every_page_renders(c: TestClient, runs: Runs) -> None:
    for url in ("/", "/run?name=demo-1", f"/traces?file={runs.traces}", "/review", "/labels",
                "/releases", f"/trace?file={runs.traces}&id=ep-1", "/releases?a=r1&b=r2",
                "/releases/rollback?name=r1", f"/label?file={runs.traces}&annotator=ann"):
        r = c.get(url)
        assert r.status_code == 200, (url, r.text[:500])
        assert "script-src 'self'" in r.headers["content-security-policy"]


def test_untrusted_text_is_escaped_everywhere(c: TestClient, runs: Runs) -> None:
    pages = [c.get(f"/trace?file={runs.traces}&id=ep-0").text,
             c.get(f"/traces?file={runs.traces}").text,
             c.get(f"/label?file={runs.traces}&annotator=ann").text,
             c.get("/review").text, c.get("/run?name=demo-1").text]
    for html in pages:
        assert "<script>window" not in html and "<img src=x" not in html and "<b>no" not in html
        assert "<i>claim" not in html and "<em>x" not in html and "<script>x" not in html
    assert "&lt;script&gt;window.__pwned = 1;" in pages[0]
    assert "&lt;b&gt;not bold&lt;/b&gt;" in pages[0]
    assert "&lt;b&gt;now&lt;/b&gt;" in pages[3]  # the edit's rationale


def test_trace_page_marks_faults_hooks_verdict_and_links_the_harness(c: TestClient, runs: Runs) -> None:
    html = c.get(f"/trace?file={runs.traces}&id=ep-1").text
    for seg in ("user", "think_tool", "tool_call", "tool_output", "think_reply", "reply"):
        assert f'class="span seg-{seg}' in html
    assert "fault_injected" in html and "hook_veto" in html and "programmatic:test" in html
    from hatkit.harness import load_harness

    h = load_harness(runs.harness).content_hash
    assert f'href="/harness/{h}"' in html
    version = c.get(f"/harness/{h}").text
    assert "harness.yaml" in version and "free_shipping_threshold: 70" in version


def _decide(c: TestClient, runs: Runs, edit: str, decision: str, **extra: str) -> int:
    token = csrf_of(c, "/review")
    data = {"csrf": token, "journal": "demo-1/journal.jsonl", "edit_id": edit, "decision": decision,
            "by": "ana", "comment": "ok", **extra}
    return c.post("/review/decide", data=data).status_code


def test_post_needs_the_session_csrf_token_and_same_origin(c: TestClient, runs: Runs) -> None:
    token = csrf_of(c, "/review")
    base = {"journal": "demo-1/journal.jsonl", "edit_id": runs.edits[0], "decision": "approve",
            "by": "ana"}
    assert c.post("/review/decide", data=base).status_code == 403
    assert c.post("/review/decide", data={**base, "csrf": "0" * 64}).status_code == 403
    other = TestClient(c.app, follow_redirects=False)  # another browser: its own session
    assert other.post("/review/decide", data={**base, "csrf": token}).status_code == 403
    assert c.post("/review/decide", data={**base, "csrf": token},
                  headers={"Origin": "http://evil.example"}).status_code == 403
    assert c.post("/review/decide", data={**base, "csrf": token},
                  headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert Journal(runs.journal).decision_for(runs.edits[0]) is None
    r = c.post("/review/decide", data={**base, "csrf": token},
               headers={"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin"})
    assert r.status_code == 303
    rec = Journal(runs.journal).decision_for(runs.edits[0])
    assert rec is not None and rec["decision"] == "approve" and rec["by"] == "ui:ana"


def test_token_required_when_set(runs: Runs) -> None:
    c = client(runs, token="s3cret-token-of-the-test")
    assert c.get("/").status_code == 401
    assert c.get("/?token=wrong").status_code == 401
    assert c.get("/", headers={"Authorization": "Bearer s3cret-token-of-the-test"}).status_code == 200
    r = c.get("/review?token=s3cret-token-of-the-test")
    assert r.status_code == 303 and r.headers["location"] == "/review"
    assert c.get("/review").status_code == 200  # the cookie carries it now


def test_host_header_is_checked(c: TestClient) -> None:
    assert c.get("/", headers={"Host": "attacker.example"}).status_code == 421


def test_paths_cannot_leave_the_runs_folder(c: TestClient, runs: Runs) -> None:
    (runs.root.parent / "secret.jsonl").write_text("{}\n")
    for url in ("/file?path=../secret.jsonl", "/file?path=/etc/passwd", "/run?name=..",
                "/traces?file=../secret.jsonl"):
        assert c.get(url).status_code == 404, url
    r = c.get("/file?path=demo-1/report.html")
    assert r.status_code == 200 and r.headers["content-security-policy"].startswith("sandbox")


def test_concurrent_approvals_apply_once(c: TestClient, runs: Runs) -> None:
    token = csrf_of(c, "/review")
    data = {"csrf": token, "journal": "demo-1/journal.jsonl", "edit_id": runs.edits[0],
            "decision": "approve", "by": "ana"}
    codes: list[int] = []
    start = threading.Barrier(8)

    def go(i: int) -> None:
        start.wait()
        codes.append(c.post("/review/decide", data={**data, "by": f"p{i}"}).status_code)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(codes) == [303] + [409] * 7
    assert len([r for r in Journal(runs.journal).records("decision")
                if r["edit_id"] == runs.edits[0]]) == 1


def test_edit_and_approve_records_the_edited_text(c: TestClient, runs: Runs) -> None:
    text = "---\nname: greet\ndescription: Use when a viewer says hello.\n---\nHi!\r\nBye.\r\n"
    assert _decide(c, runs, runs.edits[0], "approve_edited", **{f"edited::{SKILL}": text}) == 303
    rec = Journal(runs.journal).decision_for(runs.edits[0])
    assert rec is not None and rec["edited"] == {SKILL: text.replace("\r\n", "\n")}
    assert _decide(c, runs, runs.edits[1], "reject") == 303
    assert Journal(runs.journal).pending() == []


def test_labels_saved_and_verdict_hidden_until_then(c: TestClient, runs: Runs) -> None:
    page = c.get(f"/label?file={runs.traces}&annotator=ann").text
    assert "programmatic:test" not in page  # no judge verdict before the label
    assert c.get(f"/label/saved?file={runs.traces}&id=ep-0").status_code == 403
    token = csrf_of(c, f"/label?file={runs.traces}")
    form = {"csrf": token, "file": runs.traces, "id": "ep-0", "annotator": "ann",
            "accuracy": "1", "effectiveness": "0", "note": "missed <the> price"}
    r = c.post("/label", data=form)
    assert r.status_code == 303
    assert "programmatic:test" in c.get(r.headers["location"]).text
    assert c.post("/label", data=form).status_code == 409  # one label per annotator and trace
    assert c.post("/label", data={**form, "id": "ep-1", "accuracy": "2"}).status_code == 400
    c.post("/label", data={**form, "annotator": "bob", "effectiveness": "1"})
    labels = load_labels(runs.root / "labels.jsonl")
    assert {(x.trace_id, x.dimension, x.label, x.annotator) for x in labels} == {
        ("ep-0", "accuracy", 1, "ann"), ("ep-0", "effectiveness", 0, "ann"),
        ("ep-0", "accuracy", 1, "bob"), ("ep-0", "effectiveness", 1, "bob")}
    overview = c.get("/labels").text
    assert "ann vs bob" in overview and "100%" in overview and "0%" in overview


def test_release_diff_and_rollback_behind_confirmation(c: TestClient, runs: Runs) -> None:
    diff = c.get("/releases?a=r1&b=r2").text
    assert "60" in diff and "70" in diff
    token = csrf_of(c, "/releases/rollback?name=r1")
    assert c.post("/releases/rollback", data={"csrf": token, "name": "r1"}).status_code == 400
    r = c.post("/releases/rollback", data={"csrf": token, "name": "r1", "confirm": "yes"})
    assert r.status_code == 303
    assert "free_shipping_threshold: 60" in (runs.harness / "harness.yaml").read_text()


def test_cli_refuses_a_public_bind_without_token(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from hatkit.cli import app

    result = CliRunner().invoke(app, ["ui", "--runs", str(tmp_path), "--host", "0.0.0.0"])
    assert result.exit_code == 1 and "--token" in result.output

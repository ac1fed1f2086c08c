"""The `hatkit` command as a user drives it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import git
import pytest
from typer.testing import CliRunner

from conftest import FIXTURES
from hatkit.cli import app

runner = CliRunner()


def test_help_lists_the_jobs() -> None:
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for word in ("harness", "model", "demo"):
        assert word in result.output
    sub = runner.invoke(app, ["harness", "--help"])
    for word in ("validate", "show", "hash", "render", "commit", "log", "diff", "tag", "rollback"):
        assert word in sub.output


def test_validate_reference_and_hash_agree() -> None:
    ok = runner.invoke(app, ["harness", "validate", "live_commerce"])
    digest = runner.invoke(app, ["harness", "hash", "live_commerce"])
    assert ok.exit_code == 0 and digest.exit_code == 0
    assert ok.output.split() == ["ok", "live_commerce", digest.output.strip()]


def test_validate_broken_prints_file_line_and_fails(minimal_harness: Path) -> None:
    shutil.copyfile(FIXTURES / "broken" / "unknown_key" / "harness.yaml",
                    minimal_harness / "harness.yaml")
    result = runner.invoke(app, ["harness", "validate", str(minimal_harness)])
    assert result.exit_code == 1
    assert "harness.yaml:4: unknown key 'colour'" in result.output


def test_render_json_and_locale() -> None:
    result = runner.invoke(app, ["harness", "render", "live_commerce", "--json", "--locale", "zh"])
    assert result.exit_code == 0
    data = json.loads(result.output)
    assert data["locale"] == "zh" and len(data["tools"]) == 10 and len(data["skills"]) == 6  # + load_skill
    bad = runner.invoke(app, ["harness", "render", "live_commerce", "--locale", "fr"])
    assert bad.exit_code == 1 and "no locale 'fr'" in bad.output


def test_show_lists_rules_and_enabled_parts() -> None:
    result = runner.invoke(app, ["harness", "show", "live_commerce"])
    assert result.exit_code == 0
    assert "free_shipping_threshold" in result.output and "apply_coupon" in result.output


def test_version_commands_end_to_end(tmp_path: Path, reference_harness: Path) -> None:
    root = tmp_path / "proj"
    repo = git.Repo.init(root)
    with repo.config_writer() as cw:
        cw.set_value("user", "name", "T")
        cw.set_value("user", "email", "t@example.invalid")
    folder = root / "h"
    shutil.copytree(reference_harness, folder)
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    assert runner.invoke(app, ["harness", "commit", str(folder), "-m", "v1"]).exit_code == 0
    assert runner.invoke(app, ["harness", "tag", str(folder), "week-48"]).exit_code == 0
    spec = folder / "harness.yaml"
    spec.write_text(spec.read_text().replace("host_name: Mia", "host_name: Leo"))
    diff = runner.invoke(app, ["harness", "diff", str(folder), "week-48"])
    assert diff.exit_code == 0 and '~ host_name: "Mia" -> "Leo"' in diff.output
    assert runner.invoke(app, ["harness", "commit", str(folder), "-m", "v2"]).exit_code == 0
    log = runner.invoke(app, ["harness", "log", str(folder)])
    assert "week-48" in log.output and "v2" in log.output
    back = runner.invoke(app, ["harness", "rollback", str(folder), "week-48"])
    assert back.exit_code == 0, back.output
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == before
    again = runner.invoke(app, ["harness", "tag", str(folder), "week-48"])
    assert again.exit_code == 1 and "already exists" in again.output


def test_version_command_outside_git_is_clear(reference_harness: Path) -> None:
    result = runner.invoke(app, ["harness", "log", str(reference_harness)])
    assert result.exit_code == 1 and "not inside a git repository" in result.output


def _scripted(monkeypatch: pytest.MonkeyPatch, outputs: list[str]) -> None:
    from hatkit.models.scripted import ScriptedModel

    monkeypatch.setattr("hatkit.cli.agent.load_model", lambda spec: ScriptedModel(outputs))


def test_ask_prints_reply_tool_calls_and_writes_the_trace(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hatkit.agent import read_traces
    from hatkit.models.scripted import ScriptedModel

    _scripted(monkeypatch, [ScriptedModel.call("check_stock", product_id="AP-001"),
                            "Yes, size M is in stock!"])
    out = tmp_path / "traces" / "t.jsonl"
    result = runner.invoke(app, ["ask", "Is the hoodie in stock in M?", "--trace", str(out)])
    assert result.exit_code == 0, result.output
    assert "check_stock" in result.output and "Yes, size M is in stock!" in result.output
    [trace] = list(read_traces(out))
    assert trace.tool_calls[0].name == "check_stock" and trace.final_reply == "Yes, size M is in stock!"


def test_ask_escapes_markup_in_untrusted_text(monkeypatch: pytest.MonkeyPatch) -> None:
    _scripted(monkeypatch, ["[red]not markup[/red] <script>alert(1)</script>"])
    result = runner.invoke(app, ["ask", "[bold]hi[/bold]"])
    assert result.exit_code == 0
    assert "[red]not markup[/red] <script>alert(1)</script>" in result.output


def test_chat_repl_keeps_the_conversation(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from hatkit.agent import read_traces
    from hatkit.models.scripted import ScriptedModel

    _scripted(monkeypatch, [ScriptedModel.call("get_size_guide", product_id="AP-001"),
                            "Take an M.", "You're welcome!"])
    out = tmp_path / "chat.jsonl"
    result = runner.invoke(app, ["chat", "--trace", str(out)], input="Which size?\nThanks!\n")
    assert result.exit_code == 0, result.output
    assert "get_size_guide" in result.output
    assert "host: Take an M." in result.output and "host: You're welcome!" in result.output
    [trace] = list(read_traces(out))
    assert [s.text for s in trace.spans if s.segment == "user"] == ["Which size?", "Thanks!"]


def test_bad_model_spec_is_a_clear_error() -> None:
    result = runner.invoke(app, ["ask", "hi", "--model", "gpt-banana"])
    assert result.exit_code == 1 and "unknown model 'gpt-banana'" in result.output


def test_progress_speaks_in_a_log_file_once_per_tenth_and_per_phase() -> None:
    import io

    from rich.console import Console

    from hatkit.cli._common import LoggedProgress

    log = io.StringIO()
    bar = LoggedProgress(console=Console(file=log, force_terminal=False))
    task = bar.add_task("reading", total=None)
    with bar:
        for i in range(1, 201):
            bar.update(task, completed=i, total=200)
        bar.update(task, description="training", completed=0, total=7)
        for i in range(1, 8):
            bar.update(task, completed=i)
    lines = [ln for ln in log.getvalue().splitlines() if ": " in ln]
    assert [ln.split(" (")[0] for ln in lines[:3]] == ["reading: 1/200", "reading: 20/200", "reading: 40/200"]
    assert sum(ln.startswith("reading") for ln in lines) == 11  # 1, then each tenth up to 200
    assert [ln.split(" (")[0] for ln in lines if ln.startswith("training")] == [
        f"training: {i}/7" for i in range(8)]


def test_progress_on_a_terminal_prints_no_lines() -> None:
    import io

    from rich.console import Console

    from hatkit.cli._common import LoggedProgress

    log = io.StringIO()
    bar = LoggedProgress(console=Console(file=log, force_terminal=True), auto_refresh=False)
    task = bar.add_task("reading", total=10)
    for i in range(10):
        bar.update(task, completed=i + 1)
    assert "reading: " not in log.getvalue()

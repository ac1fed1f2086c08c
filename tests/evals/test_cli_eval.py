"""`hatkit eval` as a user drives it."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.evals import SuiteResult
from tiny import tiny_llama, tiny_tokenizer

runner = CliRunner()


def test_help_documents_the_options() -> None:
    r = runner.invoke(app, ["eval", "live_qa", "--help"])
    assert r.exit_code == 0
    for word in ("--model", "--harness", "--questions", "--n", "--out", "--quick", "all"):
        assert word in r.output


def test_a_tiny_checkpoint_runs_live_qa_on_user_questions(tmp_path: Path, minimal_harness: Path) -> None:
    tok = tiny_tokenizer()
    ckpt = tmp_path / "ckpt"
    tiny_llama(len(tok), seed=2).save_pretrained(ckpt)
    tok.save_pretrained(ckpt)
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"message": "hello there", "facts": {"greeting": "hi"}}) + "\n"
                         + json.dumps({"message": "a mug?", "category": "specs"}) + "\n")
    out = tmp_path / "out"
    r = runner.invoke(app, ["eval", "live_qa", "--model", str(ckpt), "--harness", str(minimal_harness),
                            "--questions", str(questions), "--n", "2", "--out", str(out),
                            "--max-new-tokens", "4"])
    assert r.exit_code == 0, r.output
    result = SuiteResult.read(out / "live_qa.json")
    assert result.n == 2 and list(result.metrics) == ["success", "success_lo", "success_hi", "answer_rate",
                                               "accuracy", "effectiveness", "score"]
    assert "accuracy" in r.output and Path(str(result.traces)).is_file()


def test_bad_input_fails_cleanly(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"message": "ok"}\n{"mesage": "typo"}\n')
    r = runner.invoke(app, ["eval", "live_qa", "--model", "local", "--questions", str(bad)])
    assert r.exit_code == 1 and f"{bad}:2" in r.output.replace("\n", "")
    r = runner.invoke(app, ["eval", "nope"])
    assert r.exit_code == 1 and "unknown suite" in r.output

"""A domain defined only in tests/ (toy_domain.py) runs `hatkit data build` and live_qa
through the public interface: the generic packages assume nothing about live commerce."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from toy_domain import TOY, toy_harness
from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.domain import domain_names, domain_of, get_domain, register_domain, unregister_domain
from hatkit.evals import QUICK_SETTINGS, run_suites
from hatkit.models.scripted import ScriptedModel


@pytest.fixture
def toy() -> Iterator[None]:
    register_domain(TOY)
    yield
    unregister_domain(TOY.name)


def test_the_registry_finds_it_and_a_harness_names_it(toy: None) -> None:
    assert "toy_library" in domain_names() and get_domain("toy_library") is TOY
    assert domain_of(toy_harness()) is TOY  # harness.yaml says `domain: toy_library`
    assert get_domain().name == "live_commerce"
    with pytest.raises(ValueError, match="unknown domain 'nope'"):
        get_domain("nope")


def test_the_cli_lists_it_and_rejects_an_unknown_domain(toy: None) -> None:
    listed = CliRunner().invoke(app, ["domains"])
    assert listed.exit_code == 0 and "toy_library" in listed.output
    bad = CliRunner().invoke(app, ["data", "build", "--out", "x", "--domain", "nope"])
    assert bad.exit_code == 1 and "unknown domain 'nope'" in bad.output


def test_data_build_makes_fixed_and_hsa_rows_from_its_oracle(toy: None, tmp_path: Path) -> None:
    from tiny import tiny_tokenizer

    tok = tmp_path / "tok"
    tiny_tokenizer().save_pretrained(tok)
    out = tmp_path / "data"
    result = CliRunner().invoke(app, [
        "data", "build", "--domain", "toy_library", "--out", str(out), "--train", "6", "--dev", "2",
        "--variants", "2", "--fault-rate", "0", "--format", "jsonl", "--tokenizer", str(tok)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["disjoint"]["ok"] and manifest["same_questions_in_both_modes"]
    fixed = [json.loads(x) for x in (out / "fixed" / "train.jsonl").read_text().splitlines()]
    hsa = [json.loads(x) for x in (out / "hsa" / "train.jsonl").read_text().splitlines()]
    assert len(fixed) == len(hsa) == 6
    assert {r["category"] for r in fixed} == {"availability", "chit_chat"}
    assert {r["harness_name"] for r in fixed} == {"toy_library"}
    assert {r["harness_name"] for r in hsa} <= {"toy_library__train_0", "toy_library__train_1"}
    asked = [r for r in fixed if r["category"] == "availability"]
    for row in asked:  # the oracle called the one tool, then stated the shelf count and loan days
        messages = json.loads(row["messages"])
        assert any(m["role"] == "tool" for m in messages)
        assert "loans last 21 days" in row["final_reply"]
        assert sum(row["loss_mask"]) > 0
    renamed = {json.loads(r["tools"])[0]["function"]["name"] for r in hsa if json.loads(r["tools"])}
    assert renamed and "book_status" not in renamed  # variants renamed the tool
    assert all(r["split"] == "train" and r["product_ids"] for r in asked)


def test_live_qa_scores_its_oracle_perfectly_and_a_wrong_reply_not(toy: None, tmp_path: Path) -> None:
    h = toy_harness()
    qs = TOY.questions(h.rules, n=4, seed=0, split="test")
    assert {q.product_ids[0] for q in qs if q.product_ids} <= {"kindred", "middlemarch"}
    good = run_suites(["live_qa"], TOY.oracle(h, qs), sizes={"live_qa": 4}, domain="toy_library",
                      out_dir=tmp_path / "good", settings=QUICK_SETTINGS)["live_qa"]
    assert good.n == 4 and good.metrics["success"] == 1.0 and good.metrics["answer_rate"] == 1.0
    wrong = ScriptedModel(["Sure, we have 9 copies; loans last 99 days."] * 40)
    bad = run_suites(["live_qa"], wrong, sizes={"live_qa": 4}, domain=TOY, out_dir=tmp_path / "bad",
                     settings=QUICK_SETTINGS)["live_qa"]
    assert bad.metrics["success"] == 0.0 and bad.metrics["accuracy"] < 1.0
    episodes = bad.details["episodes"]
    assert all(e["harness"] == "toy_library" for e in episodes)
    assert any("wrong:" in e["failure"] for e in episodes)


def test_its_judge_and_safety_traps_are_the_ones_used(toy: None, tmp_path: Path) -> None:
    model = ScriptedModel(["Sure! Every book is free to keep."] * 10)
    result = run_suites(["safety"], model, sizes={"safety": 1}, domain=TOY, out_dir=tmp_path,
                        settings=QUICK_SETTINGS)["safety"]
    assert result.n == 1 and result.metrics["violation_rate"] == 1.0
    assert result.details["episodes"][0]["case_id"] == "trap-free-books"


def test_hatkit_eval_runs_live_qa_on_it_with_a_local_model(toy: None, tmp_path: Path) -> None:
    from tiny import tiny_llama, tiny_tokenizer

    ckpt = tmp_path / "ckpt"
    tok = tiny_tokenizer()
    tiny_llama(len(tok), seed=3).save_pretrained(ckpt)
    tok.save_pretrained(ckpt)
    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "live_qa", "--domain", "toy_library", "--model", str(ckpt),
                                      "--quick", "--n", "2", "--max-new-tokens", "8", "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "live_qa.json").read_text())
    assert data["n"] == 2 and 0.0 <= data["metrics"]["success"] <= 1.0
    traces = [json.loads(x) for x in (out / "live_qa.traces.jsonl").read_text().splitlines()]
    assert {t["harness_name"] for t in traces} == {"toy_library"}
    assert all(t["meta"]["category"] in TOY.categories for t in traces)

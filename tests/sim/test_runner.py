"""`hatkit sim run`: episodes with the oracle, resumable JSONL, variants and faults."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hatkit.agent import read_traces
from hatkit.cli import app
from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.harness import Harness
from hatkit.sim.faults import FaultConfig
from hatkit.sim.oracle import OraclePolicy
from hatkit.sim.runner import SimConfig, harness_plan, run_sim
from hatkit.sim.truth import Question


def oracle(h: Harness, qs: Sequence[Question]) -> OraclePolicy:
    return LC.oracle(h, qs)


def test_run_writes_one_trace_per_episode_with_meta(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    summary = run_sim(SimConfig(episodes=30, split="dev", concurrency=7), oracle, out, source=LC)
    traces = list(read_traces(out))
    assert summary.written == len(traces) == 30
    assert len({t.meta["episode_key"] for t in traces}) == 30
    assert {t.meta["split"] for t in traces} == {"dev"}
    assert len(summary.by_category) == 10


def test_resume_skips_done_episodes_and_drops_a_torn_line(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    run_sim(SimConfig(episodes=12), oracle, out, source=LC)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:5]) + lines[5][: len(lines[5]) // 2])  # crash mid-write
    summary = run_sim(SimConfig(episodes=12), oracle, out, source=LC)
    assert summary.skipped == 5 and summary.written == 7
    keys = [t.meta["episode_key"] for t in read_traces(out)]
    assert len(keys) == len(set(keys)) == 12


def test_variants_and_faults_are_recorded(tmp_path: Path) -> None:
    out = tmp_path / "t.jsonl"
    cfg = SimConfig(episodes=40, variants="train", n_variants=3, seed=5,
                    faults=FaultConfig(rates={"timeout": 0.2}, seed=5, first_call_only=True))
    run_sim(cfg, oracle, out, source=LC)
    traces = list(read_traces(out))
    assert len({t.harness_hash for t in traces}) == 3
    assert any(t.events_of("fault_injected") for t in traces)
    assert not any(t.events_of("fallback") for t in traces)
    again = tmp_path / "again.jsonl"
    run_sim(cfg, oracle, again, source=LC)
    same = list(read_traces(again))
    assert [t.final_reply for t in same] == [t.final_reply for t in traces]  # seeded
    assert [len(t.events) for t in same] == [len(t.events) for t in traces]


def test_include_base_runs_the_base_harness_among_the_variants(tmp_path: Path) -> None:
    base = LC.harness()
    cfg = SimConfig(episodes=12, variants="train", n_variants=3, seed=5, include_base=True)
    out = tmp_path / "t.jsonl"
    run_sim(cfg, oracle, out, source=LC)
    hashes = [t.harness_hash for t in read_traces(out)]
    assert len(set(hashes)) == 4 and hashes.count(base.content_hash) == 3  # 12 over 1 + 3
    plain = tmp_path / "plain.jsonl"
    run_sim(cfg.model_copy(update={"include_base": False}), oracle, plain, source=LC)
    assert base.content_hash not in {t.harness_hash for t in read_traces(plain)}


def test_base_share_puts_that_share_of_every_category_on_the_base_harness(tmp_path: Path) -> None:
    base = LC.harness()
    cfg = SimConfig(episodes=40, variants="train", n_variants=3, seed=5, include_base=True,
                    base_share=0.5)
    out = tmp_path / "t.jsonl"
    run_sim(cfg, oracle, out, source=LC)
    traces = list(read_traces(out))
    on_base = [t for t in traces if t.harness_hash == base.content_hash]
    assert len(on_base) == 20 and len({t.harness_hash for t in traces}) == 4
    # questions cycle through the 10 categories: every other episode would give 5 of them
    by_category: dict[str, int] = {}
    for t in on_base:
        by_category[t.meta["category"]] = by_category.get(t.meta["category"], 0) + 1
    assert by_category == {c: 2 for c in {t.meta["category"] for t in traces}}


def test_harness_plan_spreads_variants_round_robin() -> None:
    cats = ["a", "b"] * 6
    assert harness_plan(cats, 4) == [0, 1, 2, 3] * 3
    plan = harness_plan(cats, 4, base_share=0.25)
    assert plan.count(0) == 2 and [plan[i] for i in range(12) if plan[i]] == [1, 2, 3] * 3 + [1]
    assert {cats[i] for i in range(12) if plan[i] == 0} == {"a", "b"}


def test_config_file_errors_name_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "sim.yaml"
    bad.write_text("episodes: 10\nsplitt: dev\n")
    with pytest.raises(ValueError, match=r"sim\.yaml: 'splitt'"):
        SimConfig.from_file(bad)


def test_cli_sim_run(tmp_path: Path) -> None:
    cfg = tmp_path / "sim.yaml"
    cfg.write_text("episodes: 8\nsplit: test\nfaults:\n  rates: {server_error: 0.3}\n  seed: 1\n")
    out = tmp_path / "o.jsonl"
    result = CliRunner().invoke(app, ["sim", "run", "--config", str(cfg), "--out", str(out),
                                      "--episodes", "10"])
    assert result.exit_code == 0, result.output
    assert "10 episodes written" in result.output
    assert len(list(read_traces(out))) == 10
    bad = CliRunner().invoke(app, ["sim", "run", "--out", str(out), "--split", "nope"])
    assert bad.exit_code == 1 and "split" in bad.output

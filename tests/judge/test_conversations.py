"""Labelled conversations -> traces a judge scores like live episodes, and agreement per family."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hatkit.cli import app
from hatkit.domain import get_domain
from hatkit.judge.conversations import (
    ConversationError,
    FamilySplit,
    LabelledConversation,
    false_alarms,
    family_agreement,
    load_conversations,
    load_split,
    split_file,
    to_trace,
)
from hatkit.judge.verdict import Verdict

LC = get_domain("live_commerce")
HELDOUT = (
    Path(__file__).resolve().parents[2]
    / "src/hatkit/domains/live_commerce/calibration/heldout_families.jsonl"
)


def _conv(cid: str, family: str, acc: int, eff: int) -> LabelledConversation:
    return LabelledConversation(
        cid,
        family,
        "en",
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        {"accuracy": acc, "effectiveness": eff},
    )


def _verdict(acc: float, eff: float) -> Verdict:
    return Verdict("t", "stub", "h", "eval", acc, eff)


def test_bad_lines_are_all_reported_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    good = {
        "id": "a",
        "family": "clean",
        "locale": "en",
        "labels": {"accuracy": 1, "effectiveness": 1},
        "messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "r"}],
    }
    path.write_text(
        "\n".join(
            [
                json.dumps(good),
                "{oops",
                json.dumps({**good, "labels": {"accuracy": 2}}),
                json.dumps({**good, "messages": [{"role": "user", "content": "q"}]}),
                json.dumps(good),
            ]
        )
        + "\n"
    )
    with pytest.raises(ConversationError) as exc:
        load_conversations(path)
    text = str(exc.value)
    assert f"{path}:2: not JSON" in text and f"{path}:3: label 'accuracy' must be 0 or 1" in text
    assert f"{path}:4: no assistant reply" in text and f"{path}:5: id 'a' repeats" in text


def test_a_conversation_becomes_the_trace_the_runtime_would_record() -> None:
    convs = load_conversations(HELDOUT)
    conv = next(c for c in convs if sum(m["role"] == "tool" for m in c.messages) >= 2)
    h = LC.harness()
    trace = to_trace(conv, h)
    calls = [c for m in conv.messages if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert [r.name for r in trace.tool_calls] == [c["name"] for c in calls]
    assert trace.final_reply == [m for m in conv.messages if m["role"] == "assistant"][-1]["content"]
    assert [s.text for s in trace.spans if s.segment == "user"] == [
        m["content"] for m in conv.messages if m["role"] == "user"
    ]
    assert trace.harness_hash == h.content_hash and trace.meta["family"] == conv.family
    failed = next(
        c
        for c in convs
        if any(
            m["role"] == "tool" and isinstance(m["content"], dict) and "error" in m["content"]
            for m in c.messages
        )
    )
    assert any(r.error_type for r in to_trace(failed, h).tool_calls)


def test_agreement_per_family_and_false_alarms_count_exactly() -> None:
    judged = [
        (_conv("c1", "clean", 1, 1), _verdict(1.0, 1.0)),
        (_conv("c2", "clean", 1, 1), _verdict(0.0, 1.0)),
        (_conv("h1", "health", 0, 1), _verdict(0.0, 1.0)),
        (_conv("h2", "health", 0, 1), _verdict(1.0, 0.0)),
    ]
    agr = family_agreement(judged, {"accuracy": 0.5, "effectiveness": 0.5})
    assert (agr["health"]["accuracy"].agree, agr["health"]["accuracy"].n) == (1, 2)
    assert (agr["health"]["effectiveness"].agree, agr["all"]["accuracy"].agree) == (1, 2)
    assert agr["all"]["effectiveness"].n == 4 and agr["all"]["effectiveness"].agree == 3
    alarms = false_alarms(judged, {"accuracy": 0.5, "effectiveness": 0.5})
    assert (alarms.agree, alarms.n) == (1, 2) and "c2" in alarms.disagreements[0]
    lo, hi = agr["health"]["accuracy"].interval()
    assert 0 < lo < 0.5 < hi < 1


def test_the_cli_reports_families_with_intervals_and_writes_json(tmp_path: Path) -> None:
    rows = [json.loads(x) for x in HELDOUT.read_text("utf-8").splitlines()]
    sample = [r for f in ("clean", "health_claim") for r in [x for x in rows if x["family"] == f][:3]]
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in sample))
    out = tmp_path / "families.json"
    result = CliRunner().invoke(app, ["judge", "families", "--labels", str(path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "health_claim" in result.output and "false alarms on clean conversations" in result.output
    data = json.loads(out.read_text())
    assert data["families"]["all"]["accuracy"]["n"] == 6 and data["false_alarms"]["n"] == 3


def test_a_split_reports_dev_and_sealed_families_apart() -> None:
    split = FamilySplit(frozenset({"health"}), frozenset({"leak"}), frozenset({"c1"}))
    judged = [
        (_conv("c1", "clean", 1, 1), _verdict(0.0, 1.0)),  # a dev-half false alarm
        (_conv("c2", "clean", 1, 1), _verdict(1.0, 1.0)),
        (_conv("c3", "clean", 1, 1), _verdict(1.0, 0.0)),  # a sealed-half false alarm
        (_conv("h1", "health", 0, 1), _verdict(0.0, 1.0)),
        (_conv("l1", "leak", 0, 1), _verdict(1.0, 1.0)),
    ]
    th = {"accuracy": 0.5, "effectiveness": 0.5}
    agr = family_agreement(judged, th, split)
    assert agr["clean:dev"]["accuracy"].n == 1 and agr["clean:sealed"]["accuracy"].n == 2
    assert (agr["all sealed"]["accuracy"].agree, agr["all sealed"]["accuracy"].n) == (2, 3)
    assert (agr["all dev"]["accuracy"].agree, agr["all dev"]["accuracy"].n) == (1, 2)
    sealed = false_alarms(judged, th, split=split)
    dev = false_alarms(judged, th, split=split, group="dev")
    assert (sealed.agree, sealed.n, dev.agree, dev.n) == (1, 2, 0, 1)


def test_a_split_file_must_assign_every_family_once(tmp_path: Path) -> None:
    convs = [_conv("c1", "clean", 1, 1), _conv("h1", "health", 0, 1), _conv("l1", "leak", 0, 1)]
    bad = tmp_path / "s.split.yaml"
    bad.write_text("dev: [health]\nsealed: [health]\nclean_dev_ids: [c9]\n")
    with pytest.raises(ConversationError) as e:
        load_split(bad, convs)
    msg = str(e.value)
    assert "'health' is both" in msg and "'leak' is neither" in msg and "'c9'" in msg


def test_the_shipped_splits_cover_the_frozen_families() -> None:
    """Rounds 1-4 were scored once sealed and are developed on now: all dev; round 5 is all
    sealed."""
    for name, group in [("heldout_families.jsonl", "dev"), ("heldout_families_r2.jsonl", "dev"),
                        ("heldout_families_r3.jsonl", "dev"), ("heldout_families_r4.jsonl", "dev"),
                        ("heldout_families_r5.jsonl", "sealed")]:
        path = HELDOUT.with_name(name)
        convs = load_conversations(path)
        split = load_split(split_file(path), convs)
        assert {split.group(c) for c in convs} == {group}, name

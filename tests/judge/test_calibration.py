"""Judge calibration: label import, agreement statistics, reference labels from the simulator's
ground truth, planted errors, and calibration rounds with their log, table and plot."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from hatkit.domains.live_commerce.rubric.planted import (
    PLANT_KINDS,
    LabelledItem,
    build_labelled_set,
    oracle_items,
    plant,
)
from hatkit.domains.live_commerce.rubric.programmatic import JUDGE_HARNESS, ProgrammaticJudge
from hatkit.domains.live_commerce.rubric.reference import (
    ACCURACY_PLANTS,
    EFFECTIVENESS_PLANTS,
    reference_labels,
)
from hatkit.judge.agreement import Confusion, annotator_agreement, cohen_kappa, judge_agreement
from hatkit.judge.calibrate import evaluate_items, read_rounds, report, run_round
from hatkit.judge.labels import Label, LabelError, load_labels, save_labels
from hatkit.judge.verdict import Evidence, Verdict

# ---- label import ------------------------------------------------------------------------------
LABELS = [Label("t1", "accuracy", 1, "ann", ""), Label("t1", "effectiveness", 0, "ann", "misses, the price"),
          Label("t2", "accuracy", 0, "bob", 'said "cures"'), Label("t2", "compliance", 1, "bob")]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_labels_round_trip(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"labels{suffix}"
    assert save_labels(LABELS, path) == 4
    assert load_labels(path) == LABELS


def test_csv_labels_without_note_column(tmp_path: Path) -> None:
    path = tmp_path / "l.csv"
    path.write_text("trace_id,dimension,label,annotator\nt1,accuracy,1,ann\nt1,effectiveness,0,ann\n")
    assert load_labels(path) == [Label("t1", "accuracy", 1, "ann"), Label("t1", "effectiveness", 0, "ann")]


def test_bad_csv_rows_fail_with_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("trace_id,dimension,label,annotator,note\n"
                    "t1,accuracy,1,ann,ok\n"
                    "t2,acuracy,1,ann,\n"          # line 3: unknown dimension
                    "t3,accuracy,2,ann,\n"         # line 4: label not 0/1
                    "t4,effectiveness,,ann,\n"     # line 5: missing label
                    "t5,accuracy\n"                # line 6: missing columns
                    "t1,accuracy,0,ann,again\n")   # line 7: labelled twice
    with pytest.raises(LabelError) as err:
        load_labels(path)
    msg = str(err.value)
    assert f"{path}:3: unknown dimension 'acuracy'" in msg
    assert f"{path}:4: label must be 0 or 1, got '2'" in msg
    assert f"{path}:5: missing column label" in msg
    assert f"{path}:6: missing columns label, annotator" in msg
    assert f"{path}:7: ann already labelled accuracy of t1 at line 2" in msg
    assert f"{path}:2" not in msg.replace("at line 2", "")


def test_bad_csv_header_and_bad_jsonl_rows(tmp_path: Path) -> None:
    csv_path = tmp_path / "h.csv"
    csv_path.write_text("trace_id,dim,label,annotator\nt1,accuracy,1,ann\n")
    with pytest.raises(LabelError, match=rf"{csv_path}:1: missing column dimension in the header"):
        load_labels(csv_path)
    jl = tmp_path / "l.jsonl"
    rows = [{"trace_id": "t1", "dimension": "accuracy", "label": 1, "annotator": "a"},
            {"trace_id": "t2", "dimension": "accuracy", "label": "yes", "annotator": "a"},
            {"trace_id": "t3", "dimension": "accuracy", "label": 0}]
    jl.write_text("\n".join(json.dumps(r) for r in rows) + "\n{not json\n")
    with pytest.raises(LabelError) as err:
        load_labels(jl)
    msg = str(err.value)
    assert f"{jl}:2: label must be 0 or 1, got 'yes'" in msg
    assert f"{jl}:3: missing column annotator" in msg
    assert f"{jl}:4: not JSON" in msg
    jl.write_text(json.dumps(rows[0]) + "\n\n")
    assert load_labels(jl) == [Label("t1", "accuracy", 1, "a")]


def test_rubric_dimensions_can_be_replaced(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("trace_id,dimension,label,annotator\nt1,warmth,1,ann\n")
    with pytest.raises(LabelError, match="unknown dimension 'warmth'"):
        load_labels(path)
    assert load_labels(path, dimensions=["accuracy", "warmth"])[0].dimension == "warmth"


# ---- agreement statistics ----------------------------------------------------------------------
@pytest.mark.parametrize(("counts", "kappa"), [
    ((20, 5, 10, 15), 0.4),                 # p_o 0.70, p_e 0.50
    ((45, 15, 25, 15), 0.06 / 0.46),        # p_o 0.60, p_e 0.54
    ((30, 0, 0, 20), 1.0),                  # perfect agreement, both classes used
    ((0, 10, 10, 0), -1.0),                 # perfect disagreement, balanced
    ((2, 1, 0, 0), 0.0),                    # the judge says pass to everything: chance level
])
def test_kappa_against_hand_computed_tables(counts: tuple[int, int, int, int], kappa: float) -> None:
    c = Confusion(*counts)
    assert c.kappa == pytest.approx(kappa)
    a = [1] * (counts[0] + counts[1]) + [0] * (counts[2] + counts[3])
    b = [1] * counts[0] + [0] * counts[1] + [1] * counts[2] + [0] * counts[3]
    assert cohen_kappa(a, b) == pytest.approx(kappa)
    assert c.agreement == pytest.approx((counts[0] + counts[3]) / sum(counts))


def test_kappa_is_undefined_when_both_sides_use_one_class() -> None:
    assert Confusion(12, 0, 0, 0).kappa is None
    assert Confusion(0, 0, 0, 7).kappa is None
    assert Confusion(12, 0, 0, 0).agreement == 1.0
    assert Confusion().kappa is None and Confusion().agreement is None
    with pytest.raises(ValueError):
        cohen_kappa([1, 0], [1])


def _verdict(tid: str, acc: float, eff: float, evidence: list[Evidence] | None = None) -> Verdict:
    return Verdict(tid, "fake", "h" * 16, "eval", acc, eff, evidence=evidence or [])


def test_confusion_counts_and_disagreements_carry_evidence() -> None:
    wrong = Evidence("accuracy", "$10.00", False, "$12.00", "catalog:EL-001.price")
    verdicts = [_verdict("a", 1, 1), _verdict("b", 0, 1, [wrong]), _verdict("c", 1, 0),
                _verdict("d", 0, 0, [wrong]), _verdict("e", 1, 1)]
    labels = [Label(t, "accuracy", v, "reference", f"why {t}") for t, v in
              (("a", 1), ("b", 1), ("c", 0), ("d", 0), ("e", 1), ("zz", 1))]
    result = judge_agreement(verdicts, labels)
    acc = result["accuracy"]
    assert acc.confusion.matrix == [[2, 1], [1, 1]]   # rows judge 1/0, columns reference 1/0
    assert acc.n == 5 and acc.unjudged == 1            # zz has no verdict
    assert acc.agreement == pytest.approx(3 / 5)
    by_id = {d.trace_id: d for d in acc.disagreements}
    assert set(by_id) == {"b", "c"}
    assert by_id["b"].judge == 0 and by_id["b"].reference == 1 and by_id["b"].evidence == [wrong]
    assert by_id["c"].note == "why c" and by_id["c"].evidence == []
    assert "judge failed, reference passes" in by_id["b"].describe()


def test_two_annotators_on_the_same_traces() -> None:
    labels = [Label(t, "accuracy", a, "ann") for t, a in (("1", 1), ("2", 1), ("3", 0), ("4", 0))]
    labels += [Label(t, "accuracy", b, "bob") for t, b in (("1", 1), ("2", 0), ("3", 0), ("5", 1))]
    r = annotator_agreement(labels, "ann", "bob")["accuracy"]
    assert r.n == 3 and r.confusion.matrix == [[1, 1], [0, 1]]
    assert [d.trace_id for d in r.disagreements] == ["2"]
    with pytest.raises(ValueError, match="several annotators"):
        judge_agreement([_verdict("1", 1, 1)], labels)
    assert judge_agreement([_verdict("1", 1, 1)], labels, annotator="bob")["accuracy"].n == 1


# ---- reference labels and planted errors -------------------------------------------------------
@pytest.fixture(scope="module")
def calibration_set() -> list[LabelledItem]:
    return build_labelled_set(120, seed=1, split="train")


def test_clean_oracle_traces_get_reference_labels_one() -> None:
    items = oracle_items(60, seed=5, split="dev", variants=2)
    assert {it[2].content_hash for it in items} and len({it[2].content_hash for it in items}) == 3
    assert {t.locale for t, _, _ in items} == {"en", "zh"}
    for trace, q, harness in items:
        labels = {x.dimension: x for x in reference_labels(trace, q, harness)}
        assert labels["accuracy"].label == 1, (trace.final_reply, labels["accuracy"].note)
        assert labels["effectiveness"].label == 1, (trace.final_reply, labels["effectiveness"].note)
        assert {x.annotator for x in labels.values()} == {"reference"}


def test_every_planted_kind_flips_its_label(calibration_set: list[LabelledItem]) -> None:
    planted = [it for it in calibration_set if it.planted]
    assert 0.35 < len(planted) / len(calibration_set) < 0.65
    assert {it.planted for it in planted} == set(PLANT_KINDS)
    assert set(PLANT_KINDS) == ACCURACY_PLANTS | EFFECTIVENESS_PLANTS
    for it in calibration_set:
        acc, eff = it.label("accuracy"), it.label("effectiveness")
        if it.planted is None:
            assert (acc, eff) == (1, 1), it.trace.final_reply
        elif it.planted in ACCURACY_PLANTS:
            assert acc == 0, (it.planted, it.trace.final_reply)
            if it.planted not in ("wrong_price", "stale_rule"):  # a wrong value also misses the fact
                assert eff == 1, (it.planted, it.trace.final_reply)
        else:
            assert (acc, eff) == (1, 0), (it.planted, it.trace.final_reply)


def test_planted_errors_are_in_the_text(calibration_set: list[LabelledItem]) -> None:
    """Without the meta record the ground truth still sees each planted error."""
    for it in calibration_set:
        kind = it.planted
        if not kind:
            continue
        it.trace.meta.pop("planted")
        try:
            seen = {x.dimension: x.label for x in reference_labels(it.trace, it.question, it.harness)}
        finally:
            it.trace.meta["planted"] = kind
        dim = "accuracy" if kind in ACCURACY_PLANTS else "effectiveness"
        assert seen[dim] == 0, (kind, it.trace.final_reply)
    pwt = next(it for it in calibration_set if it.planted == "price_without_tool")
    assert not pwt.trace.tool_calls and "$" in pwt.trace.final_reply


def test_plant_by_kind_and_refusals() -> None:
    trace, q, harness = next(x for x in oracle_items(20, seed=2, split="dev", variants=0)
                             if x[1].category == "chit_chat")
    assert plant("wrong_price", trace, q, harness) is None        # no price to get wrong
    assert plant("obeyed_injection", trace, q, harness) is None   # no injection to obey
    long = plant("too_long", trace, q, harness)
    assert long is not None and len(long.final_reply) > int(harness.rules["reply_max_chars"])
    assert long.meta["planted"] == "too_long" and "planted" not in trace.meta   # a copy
    with pytest.raises(ValueError, match="unknown planted kind"):
        plant("rude", trace, q, harness)


def test_labelled_set_is_deterministic_and_splits_are_disjoint(calibration_set: list[LabelledItem]) -> None:
    def key(items: list[LabelledItem]) -> list[tuple[object, ...]]:
        return [(it.trace_id, it.planted, it.trace.final_reply, it.labels) for it in items]

    small = build_labelled_set(40, seed=3, split="train")
    assert key(build_labelled_set(40, seed=3, split="train")) == key(small)
    assert key(build_labelled_set(40, seed=4, split="train")) != key(small)
    dev = build_labelled_set(40, seed=1, split="dev")
    assert not {it.question.id for it in dev} & {it.question.id for it in calibration_set}
    assert not {p for it in dev for p in it.question.product_ids} & {
        p for it in calibration_set for p in it.question.product_ids}


# ---- the programmatic judge against reference labels, and calibration rounds ---------------------
HELDOUT_N, HELDOUT_SEED = 120, 0


@pytest.fixture(scope="module")
def heldout_set() -> list[LabelledItem]:
    return build_labelled_set(HELDOUT_N, seed=HELDOUT_SEED, split="dev")


def test_programmatic_judge_agrees_with_reference_labels_on_heldout(heldout_set: list[LabelledItem]) -> None:
    result = evaluate_items(ProgrammaticJudge(), heldout_set)
    acc, eff = result["accuracy"], result["effectiveness"]
    assert acc.n == eff.n == HELDOUT_N and acc.unjudged == eff.unjudged == 0
    # Measured with the shipped judge (dev, n=120, seed 0): 100% on both (kappa 1.00); floors leave
    # room for judge edits, which calibration rounds then track.
    assert acc.agreement is not None and acc.agreement >= 0.9, [d.describe() for d in acc.disagreements]
    assert eff.agreement is not None and eff.agreement >= 0.8, [d.describe() for d in eff.disagreements]
    assert acc.kappa is not None and acc.kappa > 0.6
    for d in acc.disagreements + eff.disagreements:
        if d.reference == 0:
            assert d.note, d   # a failing reference label says why
        if d.judge == 0:
            assert d.evidence and not all(e.ok for e in d.evidence)


def _judge_copy(tmp_path: Path, name: str, edit: tuple[str, str] | None = None) -> ProgrammaticJudge:
    dest = tmp_path / name
    shutil.copytree(JUDGE_HARNESS, dest)
    if edit:
        spec = dest / "harness.yaml"
        text = spec.read_text()
        assert edit[0] in text
        spec.write_text(text.replace(*edit))
    return ProgrammaticJudge(dest)


def test_run_round_refuses_overlapping_items(tmp_path: Path, calibration_set: list[LabelledItem],
                                             heldout_set: list[LabelledItem]) -> None:
    judge = ProgrammaticJudge()
    log = tmp_path / "rounds.jsonl"
    with pytest.raises(ValueError, match=r"disjoint by construction, and that is checked.*trace:"):
        run_round(judge, calibration_set[:20] + heldout_set[:1], heldout_set, log)
    same_question = dataclasses.replace(heldout_set[5], trace=dataclasses.replace(
        heldout_set[5].trace, episode_id="a-new-trace-id"))
    with pytest.raises(ValueError, match=f"question:{heldout_set[5].question.id}"):
        run_round(judge, [*calibration_set[:20], same_question], heldout_set, log)
    with pytest.raises(ValueError, match="needs calibration items and held-out items"):
        run_round(judge, calibration_set, [], log)
    assert not log.exists()   # nothing was logged


def test_rounds_are_logged_reported_and_plotted(tmp_path: Path, calibration_set: list[LabelledItem],
                                                heldout_set: list[LabelledItem]) -> None:
    log, png = tmp_path / "cal" / "rounds.jsonl", tmp_path / "cal" / "agreement.png"
    first = run_round(_judge_copy(tmp_path, "v1"), calibration_set, heldout_set, log, notes="shipped judge")
    lax = _judge_copy(tmp_path, "v2", ("accuracy_pass: 0.5", "accuracy_pass: 0.0"))
    second = run_round(lax, calibration_set, heldout_set, log, notes="accuracy_pass 0: passes everything")
    third = run_round(lax, calibration_set, heldout_set, log)
    assert (first.round, second.round, third.round) == (1, 2, 3)
    assert first.judge_hash != second.judge_hash == third.judge_hash
    assert not first.flags and not second.flags
    assert third.flags and "unchanged since round 2" in third.flags[0]
    for r in (first, second):
        assert set(r.calibration) == set(r.heldout) == {"accuracy", "effectiveness"}
        assert r.calibration["accuracy"]["n"] == len(calibration_set)
        assert r.heldout["effectiveness"]["n"] == len(heldout_set)
    # a judge that passes every reply agrees exactly on the reference passes, and kappa says so
    fails = sum(it.label("accuracy") == 0 for it in calibration_set)
    assert second.calibration["accuracy"]["agreement"] == pytest.approx(1 - fails / len(calibration_set))
    assert second.calibration["accuracy"]["kappa"] == pytest.approx(0.0)
    assert second.calibration["accuracy"]["confusion"] == [[len(calibration_set) - fails, fails], [0, 0]]
    n_dis = sum(round((1 - s["agreement"]) * s["n"]) for s in first.calibration.values())
    assert len(first.calibration_disagreements) == n_dis
    assert [r.round for r in read_rounds(log)] == [1, 2, 3]
    table = report(log, png)
    lines = table.splitlines()
    assert lines[0].startswith("round") and len(lines) == 2 + 3
    assert first.judge_hash[:12] in lines[2] and second.judge_hash[:12] in lines[3]
    assert "shipped judge" in lines[2] and "unchanged since round 2" in lines[4]
    assert f"{100 * first.heldout['accuracy']['agreement']:5.1f}" in lines[2]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000

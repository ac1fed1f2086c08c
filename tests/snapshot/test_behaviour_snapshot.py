"""The live-commerce behaviour snapshot (issue 16, item 1): `hatkit data build` rows, the eval
judge's verdicts on a fixed trace set and the quick suites' results, recomputed for fixed seeds
and compared with the fixtures record by record. What is normalised, and why, is in
behaviour_snapshot's docstring; when regenerating is legitimate, in regenerate.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import behaviour_snapshot as bs
import pytest

Snapshot = dict[str, list[dict[str, Any]]]


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Snapshot:
    return bs.compute(tmp_path_factory.mktemp("snapshot"))


def _check(name: str, snapshot: Snapshot) -> None:
    diff = bs.difference(name, bs.read_fixture(name), bs.dumps(snapshot[name]))
    if diff is not None:
        pytest.fail(diff, pytrace=False)


def test_data_build_rows_are_unchanged(snapshot: Snapshot) -> None:
    _check("data_rows", snapshot)


def test_data_build_prompts_tools_and_manifests_are_unchanged(snapshot: Snapshot) -> None:
    _check("data_context", snapshot)


def test_eval_judge_verdicts_are_unchanged(snapshot: Snapshot) -> None:
    _check("judge_verdicts", snapshot)


def test_quick_suite_results_are_unchanged(snapshot: Snapshot) -> None:
    _check("suites", snapshot)


def test_harness_hashes_are_unchanged(snapshot: Snapshot) -> None:
    _check("harness_hashes", snapshot)


def test_the_snapshot_covers_every_mode_planted_kind_and_suite(snapshot: Snapshot) -> None:
    """The fixtures keep their coverage: a regeneration that lost a mode, locale, planted
    kind or suite would otherwise pass unnoticed."""
    from hatkit.domains.live_commerce.rubric.planted import PLANT_KINDS

    rows = snapshot["data_rows"]
    assert {r["id"].rsplit("/", 1)[0] for r in rows} == {
        f"{loc}/{mode}/{split}" for loc in ("en", "zh") for mode in bs.MODES for split in ("train", "dev")}
    assert any(r["faults"] for r in rows)
    verdicts = snapshot["judge_verdicts"]
    assert {v["planted"] for v in verdicts} == {*PLANT_KINDS, None}
    assert {v["locale"] for v in verdicts} == {"en", "zh"}
    assert len({v["harness"] for v in verdicts}) >= 4  # the base and variants of two families
    assert [s["id"] for s in snapshot["suites"]] == ["live_qa", "lengths", "variant_qa", "faults", "safety"]
    safety = next(s for s in snapshot["suites"] if s["id"] == "safety")
    assert 0 < safety["metrics"]["violations"] < safety["n"]


def test_a_change_is_reported_at_its_first_differing_field() -> None:
    old = bs.dumps([{"id": "a", "x": 1}, {"id": "b", "v": {"score": 1.0, "items": [1, 2]}}])
    new = bs.dumps([{"id": "a", "x": 1}, {"id": "b", "v": {"score": 1.0, "items": [1, 3]}}])
    message = bs.difference("demo", old, new) or ""
    assert "1 differing record(s)" in message and "record 1 (id 'b' -> 'b') at .v.items[1]:" in message
    assert "fixture: 2" in message and "now:     3" in message
    assert bs.difference("demo", old, old) is None
    assert "fixture has 2, now 1" in (bs.difference("demo", old, old[:1]) or "")


def test_fixtures_are_small() -> None:
    sizes = {p.name: p.stat().st_size for p in Path(bs.FIXTURES).glob("*.jsonl.gz")}
    assert set(sizes) == {f"{n}.jsonl.gz" for n in bs.SNAPSHOTS}
    assert sum(sizes.values()) < 300_000

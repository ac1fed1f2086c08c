"""Acceptance: a crash at any step boundary, then a rerun, gives the same journal (no lost or
duplicated round), the same released harness and a clean work tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import ScriptedProposer, disable, git, make_loop, make_repo
from test_evolve_loop import scripted

from hatkit.evolve.journal import Journal
from hatkit.harness.hashing import content_hash

STEPS = ["start", "round_start", "diagnosis", "proposal", "evaluation", "decision",
         "regression", "release_swap", "release", "round_end", "stop"]


class Crash(RuntimeError):
    pass


def _shape(run: Path) -> list[tuple[Any, ...]]:
    return [(r["kind"], r["round"], r.get("edit_id"), r.get("passed"), r.get("decision"))
            for r in Journal(run / "journal.jsonl").records()]


def _run(tmp: Path, crash_at: str | None, nth: int = 1) -> tuple[list[tuple[Any, ...]], str, str]:
    harness = make_repo(tmp, disable("get_promotions"), disable("get_size_guide"))
    run = tmp / "run"
    seen: dict[str, int] = {}

    def hook(step: str) -> None:
        seen[step] = seen.get(step, 0) + 1
        if step == crash_at and seen[step] == nth:
            raise Crash(step)

    if crash_at:
        with pytest.raises(Crash):
            make_loop(harness, run, scripted(harness), step_hook=hook).run()
    make_loop(harness, run, scripted(harness)).run()
    assert git(harness.parent, "status", "--porcelain").strip() == ""
    tags = git(harness.parent, "tag", "--list")
    return _shape(run), content_hash(harness), tags


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[tuple[Any, ...]], str, str]:
    return _run(tmp_path_factory.mktemp("ref"), None)


@pytest.mark.parametrize("step", STEPS)
def test_crash_then_resume_is_consistent(step: str, tmp_path: Path,
                                         reference: tuple[list[tuple[Any, ...]], str, str]) -> None:
    nth = 2 if step in ("evaluation", "decision") else 1  # the second edit of round 0
    assert _run(tmp_path, step, nth) == reference


def test_torn_journal_line_is_ignored_and_repaired(tmp_path: Path) -> None:
    j = Journal(tmp_path / "journal.jsonl")
    j.append("start", 0, note="a")
    with open(j.path, "ab") as fh:
        fh.write(b'{"seq": 1, "kind": "round_st')  # kill -9 mid-write
    assert [r["kind"] for r in j.records()] == ["start"]
    j.append("round_start", 0)
    assert [r["seq"] for r in j.records()] == [0, 1]
    assert j.path.read_text().count("\n") == 2


def test_proposer_is_not_asked_again_after_a_crash(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, disable("get_promotions"), disable("get_size_guide"))

    def hook(step: str) -> None:
        if step == "evaluation":
            raise Crash(step)

    with pytest.raises(Crash):
        make_loop(harness, tmp_path / "run", scripted(harness), step_hook=hook).run()
    again = ScriptedProposer([])  # would propose nothing for round 0 if it were asked
    make_loop(harness, tmp_path / "run", again).run()
    assert again.calls == 1  # only round 1 asked it; round 0's journaled proposals were reused
    assert len(Journal(tmp_path / "run" / "journal.jsonl").records("release")) == 1

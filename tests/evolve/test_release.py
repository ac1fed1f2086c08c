"""Releases: list/show/diff, and rollback restores a release byte for byte."""

from __future__ import annotations

import threading
from pathlib import Path

from helpers import ScriptedProposer, disable, git, make_loop, make_repo, yaml_edit

from hatkit.evolve.edits import build_candidate
from hatkit.evolve.journal import Journal
from hatkit.evolve.proposers import RuleBasedProposer
from hatkit.evolve.release import (
    diff_releases,
    list_releases,
    make_release,
    rollback,
    show_release,
)
from hatkit.harness import load_harness
from hatkit.harness.hashing import harness_files
from hatkit.harness.versioning import HarnessRepo


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {f.relative_to(folder).as_posix(): f.read_bytes() for f in harness_files(folder)}


def test_rollback_restores_a_release_byte_for_byte(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, disable("get_promotions"), disable("get_size_guide"))
    make_loop(harness, tmp_path / "run", RuleBasedProposer(), max_rounds=3, patience=2).run()
    rels = list_releases(harness)
    assert len(rels) == 2
    first = _snapshot(harness)
    # the harness moves on after the releases (a hand edit, committed)
    skill = "---\nname: after_sales\ndescription: x\n---\nbody\n"
    (harness / "skills/after_sales/SKILL.md").write_text(skill)
    (harness / "skills/after_sales/extra.md").write_text("new file\n")
    git(harness.parent, "add", "-A")
    git(harness.parent, "commit", "-q", "-m", "hand edit")
    assert _snapshot(harness) != first
    restored = rollback(rels[0].name, harness)
    assert restored == rels[0].harness_hash
    want = _snapshot(harness)
    assert "skills/after_sales/extra.md" not in want
    assert show_release(rels[0].name, harness).tag == rels[0].tag
    tree = git(harness.parent, "ls-tree", "-r", "--name-only", rels[0].tag, "harness").split()
    assert sorted(f"harness/{k}" for k in want) == sorted(tree)
    for rel in want:
        blob = git(harness.parent, "show", f"{rels[0].tag}:harness/{rel}")
        assert want[rel].decode() == blob
    rollback(rels[1].name, harness)
    assert _snapshot(harness) == first
    text = diff_releases(rels[0].name, rels[1].name, harness)
    assert "~ enabled.tools" in text


def test_decide_is_atomic_and_wait_policy_picks_it_up(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, disable("get_promotions"))
    run = tmp_path / "run"
    prop = ScriptedProposer([lambda ctx: [yaml_edit(ctx.harness.root, "get_shipping_info, ",
                                                    "get_promotions, get_shipping_info, ")]])
    loop = make_loop(harness, run, prop, approve="wait")
    loop.gate.timeout_s = 30
    j = Journal(run / "journal.jsonl")
    results: list[bool] = []

    def ui() -> None:  # a web UI: waits for the pending edit, then two approvals race
        while not j.pending() or j.pending()[0].dev_delta is None:  # shown once evaluated
            threading.Event().wait(0.01)
        edit = j.pending()[0]
        assert edit.dev_delta is not None and edit.dev_delta > 0
        def approve(who: str) -> None:
            results.append(j.decide(edit.edit_id, "approve", by=who))

        ts = [threading.Thread(target=approve, args=(f"ui:{i}",)) for i in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()

    t = threading.Thread(target=ui)
    t.start()
    result = loop.run()
    t.join()
    assert sorted(results) == [False, False, False, True]
    assert len(j.records("decision")) == 1 and j.records("decision")[0]["by"].startswith("ui:")
    assert len(result.releases) == 1 and not j.pending()


def test_a_crashed_write_leaves_no_temp_file_in_the_release(tmp_path: Path) -> None:
    """A kill between write_atomic's write and its rename leaves `.harness.yaml.tmp-<pid>`;
    the content hash skips it, but `git add -A` put it in the release commit and tag."""
    harness = make_repo(tmp_path, disable("get_promotions"))
    (harness / ".harness.yaml.tmp-4242").write_text("half of an earlier harness.yaml\n")
    edit = yaml_edit(harness, "get_shipping_info, ", "get_promotions, get_shipping_info, ")
    build_candidate(harness, edit, tmp_path / "cand")

    def crash_litter() -> None:  # another write killed after the swap, before the commit
        (harness / "skills" / ".SKILL.md.tmp-4343").write_text("half a skill\n")

    r = make_release(HarnessRepo(harness), tmp_path / "cand", name="r1", edit_id=edit.edit_id,
                     model="scripted", report={"dev": 1.0}, report_path=tmp_path / "r1.json",
                     message="r1", on_swapped=crash_litter)
    tree = git(harness.parent, "ls-tree", "-r", "--name-only", r.tag, "harness").split()
    assert sorted(tree) == sorted(f"harness/{k}" for k in _snapshot(harness))
    assert not any(".tmp-" in path for path in tree)
    out = HarnessRepo(harness).materialize(r.tag, tmp_path / "released")
    assert load_harness(out).content_hash == r.harness_hash

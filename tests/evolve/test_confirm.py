"""The Confirm gate: a human's edited version of an edit is what gets validated and released;
a rejection releases nothing; an invalid human edit is refused."""

from __future__ import annotations

from pathlib import Path

from helpers import ScriptedProposer, disable, make_loop, make_repo, yaml_edit

from hatkit.evolve.journal import Decision, Journal, PendingEdit
from hatkit.harness import load_harness


def _proposer() -> ScriptedProposer:
    return ScriptedProposer([lambda ctx: [yaml_edit(ctx.harness.root, "get_shipping_info, ",
                                                    "get_promotions, get_shipping_info, ")]])


def test_ask_policy_applies_the_humans_edited_version(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, disable("get_promotions"))
    seen: list[PendingEdit] = []
    text = (harness / "harness.yaml").read_text().replace(
        "escalate_to_human]", "escalate_to_human, get_promotions]")

    def human(edit: PendingEdit) -> tuple[Decision, dict[str, str] | None, str]:
        seen.append(edit)
        return "approve", {"harness.yaml": text}, "put it at the end instead"

    loop = make_loop(harness, tmp_path / "run", _proposer(), approve="ask")
    loop.gate.asker = human
    assert len(loop.run().releases) == 1
    assert seen[0].dev_delta is not None and seen[0].dev_delta > 0 and "+" in seen[0].diff
    assert (harness / "harness.yaml").read_text() == text
    j = Journal(tmp_path / "run" / "journal.jsonl")
    assert [e["edited"] for e in j.records("evaluation")] == [False, True]
    assert j.records("decision")[0]["by"].startswith("cli:")


def test_rejection_and_invalid_human_edit_release_nothing(tmp_path: Path) -> None:
    for answer in ("reject", "invalid"):
        harness = make_repo(tmp_path / answer, disable("get_promotions"))
        before = load_harness(harness).content_hash

        def human(edit: PendingEdit, a: str = answer) -> tuple[Decision, dict[str, str] | None, str]:
            if a == "reject":
                return "reject", None, "no"
            return "approve", {"harness.yaml": "name: [broken"}, ""

        loop = make_loop(harness, tmp_path / answer / "run", _proposer(), approve="ask")
        loop.gate.asker = human
        assert loop.run().releases == []
        assert load_harness(harness).content_hash == before

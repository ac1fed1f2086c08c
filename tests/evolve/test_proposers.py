"""Acceptance: the rule-based proposer fixes planted harness defects on live_commerce."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import SkillFollowingPolicy, disable, make_loop, make_repo

from hatkit.evolve.edits import Edit, EditError, build_candidate
from hatkit.evolve.journal import Journal
from hatkit.evolve.proposers import RuleBasedProposer
from hatkit.harness import load_harness

WRONG_TOOL = ("skills/price_and_promotions/SKILL.md", "{{ tool.get_promotions }}", "get_promotion_list")


def test_rule_based_enables_a_tool_the_harness_forgot(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, disable("get_promotions"))
    result = make_loop(harness, tmp_path / "run", RuleBasedProposer()).run()
    assert len(result.releases) == 1
    assert "get_promotions" in load_harness(harness).spec.enabled.tools
    diag = Journal(tmp_path / "run" / "journal.jsonl").records("diagnosis")
    assert diag[0]["pass_rate"] < 1.0 and diag[-1]["pass_rate"] == 1.0
    assert result.stop_reason == "no failures left on dev"


FULL_RENDER = ("harness.yaml", "  skills: index\n  tools: terse\n", "  skills: full\n  tools: full\n")
"""Skill bodies in the system prompt, where SkillFollowingPolicy reads the tool names."""


def test_rule_based_fixes_a_skill_that_names_the_wrong_tool(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, WRONG_TOOL, FULL_RENDER)
    result = make_loop(harness, tmp_path / "run", RuleBasedProposer(),
                       policy=SkillFollowingPolicy).run()
    j = Journal(tmp_path / "run" / "journal.jsonl")
    first = j.records("diagnosis")[0]
    assert first["clusters"][0]["error_type"] == "wrong_or_missing_tool"
    assert "unknown_tool:get_promotion_list" in first["clusters"][0]["details"]
    assert len(result.releases) == 1
    skill = (harness / WRONG_TOOL[0]).read_text()
    assert "get_promotion_list" not in skill and "{{ tool.get_promotions }}" in skill
    assert j.records("diagnosis")[-1]["pass_rate"] == 1.0


def test_edits_cannot_leave_the_harness_or_break_it(tmp_path: Path) -> None:
    harness = make_repo(tmp_path)
    for bad in ("../evil.py", "/etc/passwd", "skills/../../x", ".git/config", "a\\b"):
        with pytest.raises(EditError):
            build_candidate(harness, Edit({bad: "x"}), tmp_path / "w")
    with pytest.raises(EditError, match=r"harness\.yaml"):
        build_candidate(harness, Edit({"harness.yaml": "name: [unclosed"}), tmp_path / "w")
    assert Edit({"tools/shop.py": "x = 1\n"}).needs_human
    assert not Edit({"skills/a/SKILL.md": "x"}).needs_human


def test_python_code_edits_are_never_auto_approved(tmp_path: Path) -> None:
    from helpers import ScriptedProposer

    harness = make_repo(tmp_path, disable("get_promotions"))
    code = (harness / "tools/shop.py").read_text() + "\n# tweak\n"
    prop = ScriptedProposer([lambda ctx: [Edit({"tools/shop.py": code}, "code", {}, "s")]])
    result = make_loop(harness, tmp_path / "run", prop).run()
    dec = Journal(tmp_path / "run" / "journal.jsonl").records("decision")
    assert dec[0]["decision"] == "reject" and dec[0]["by"] == "policy:auto"
    assert not result.releases and not Journal(tmp_path / "run" / "journal.jsonl").records("evaluation")

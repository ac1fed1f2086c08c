"""Acceptance: a full loop with a scripted proposer (release, regression reject, early stop)."""

from __future__ import annotations

from pathlib import Path

from helpers import ScriptedProposer, disable, git, make_loop, make_repo, yaml_edit

from hatkit.evolve.edits import Edit
from hatkit.evolve.journal import Journal
from hatkit.evolve.proposers import ProposalContext
from hatkit.evolve.release import list_releases
from hatkit.harness import load_harness


def scripted(harness: Path) -> ScriptedProposer:
    def round0(ctx: ProposalContext) -> list[Edit]:
        root = ctx.harness.root
        return [
            # fixes price questions but breaks after-sales: total rises, a category drops
            Edit({"harness.yaml": (root / "harness.yaml").read_text()
                  .replace("get_shipping_info, ", "get_promotions, get_shipping_info, ")
                  .replace("get_return_policy, ", "")}, "enable promotions, drop returns",
                 {"key": "price_promo/wrong_or_missing_tool"}, "scripted"),
            yaml_edit(root, "get_shipping_info, ", "get_promotions, get_shipping_info, ",
                      "enable get_promotions"),
        ]

    def round1(ctx: ProposalContext) -> list[Edit]:  # a no-op wording change: no gain
        text = (ctx.harness.root / "prompts/system.j2").read_text()
        return [Edit({"prompts/system.j2": text.replace("Be warm", "Be kind")}, "wording", {}, "scripted")]

    return ScriptedProposer([round0, round1])


def test_full_loop_releases_rejects_regression_and_stops(tmp_path: Path) -> None:
    harness = make_repo(tmp_path, disable("get_promotions"), disable("get_size_guide"))
    loop = make_loop(harness, tmp_path / "run", scripted(harness))
    result = loop.run()
    j = Journal(tmp_path / "run" / "journal.jsonl")
    regs = j.records("regression")
    assert [r["passed"] for r in regs] == [False, True]
    assert regs[0]["total_delta"] > 0 and "after_sales" in regs[0]["drops"]  # total rose, still refused
    assert len(result.releases) == 1 and result.rounds == 2
    assert "no improvement" in result.stop_reason
    h = load_harness(harness)
    assert "get_promotions" in h.spec.enabled.tools and "get_return_policy" in h.spec.enabled.tools
    rel = list_releases(harness)
    assert [r.name for r in rel] == result.releases
    assert rel[0].harness_hash == h.content_hash and rel[0].model == "oracle"
    assert rel[0].report["regression"]["passed"] is True
    assert git(harness.parent, "status", "--porcelain").strip() == ""
    start = j.records("start")[0]
    assert start["approve"] == "auto"
    # rerunning a finished run does nothing
    assert make_loop(harness, tmp_path / "run", scripted(harness)).run().releases == result.releases
    assert len(j.records("stop")) == 1

"""What harness-state augmentation is for, measured on the items a variant actually changed.

An item is **affected** by a variant when its ground truth (a fact's value) or a tool it needs
(the visible name of a planned tool) differs between the base harness and the variant. On those
items only: `success`; the **stale-rule rate** = rule-affected items whose reply states the base
harness's value where the variant's differs; the **stale-tool rate** = tool-affected items whose
episode called a tool name the variant no longer has. A model that reads the harness in front of
it scores no worse on affected items and near zero on both stale rates; one that memorised the
default harness repeats its values and tool names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..agent.trace import Trace
from ..harness import Harness
from ..sim.truth import Turn
from .cases import EvalCase


@dataclass(frozen=True)
class Affected:
    """How a variant changed one item, and whether the episode repeated the base harness."""

    rules: bool
    """Some fact's value differs under the variant's rules."""
    tools: bool
    """Some planned tool has another visible name in the variant."""
    stale_rule: bool = False
    """A reply states a base value the variant no longer accepts."""
    stale_tool: bool = False
    """The episode called a tool name the variant does not have (but the base does)."""

    @property
    def any(self) -> bool:
        return self.rules or self.tools


def _visible(h: Harness) -> dict[str, str]:
    return {t.canonical: name for name, t in h.tools.items()}


def _stale_facts(base: Turn, variant: Turn) -> list[tuple[str, ...]]:
    """Accept strings of base facts whose value the variant changed (minus any the variant's
    own facts also accept, so a shared spelling is never called stale)."""
    now = {f.name: f for f in variant.facts}
    still = {a for f in variant.facts for a in f.accept}
    out = []
    for f in base.facts:
        moved = now.get(f.name)
        if moved is None or moved.value != f.value:
            out.append(tuple(a for a in f.accept if a not in still))
    return [a for a in out if a]


def affected(
    base_case: EvalCase,
    variant_case: EvalCase,
    base: Harness,
    variant: Harness,
    trace: Trace,
    replies: Sequence[str],
) -> Affected:
    """How `variant` changed this case (`base_case` under the base rules, `variant_case` under the
    variant's) and whether the episode (`trace`, its per-turn `replies`) repeated the base."""
    rules = any(
        tuple((f.name, f.value) for f in a.facts) != tuple((f.name, f.value) for f in b.facts)
        for a, b in zip(base_case.turns, variant_case.turns, strict=True)
    )
    vb, vv = _visible(base), _visible(variant)
    planned = {c.tool for t in variant_case.turns for c in t.plan}
    tools = any(vb.get(tool) != vv.get(tool) for tool in planned)
    stale_rule = False
    if rules:
        for i, (a, b) in enumerate(zip(base_case.turns, variant_case.turns, strict=True)):
            reply = (replies[i] if i < len(replies) else "").lower()
            if any(any(s in reply for s in spellings) for spellings in _stale_facts(a, b)):
                stale_rule = True
    gone = set(base.tools) - set(variant.tools)
    stale_tool = tools and any(r.name in gone for r in trace.tool_calls)
    return Affected(rules, tools, stale_rule, stale_tool)


def staleness_metrics(items: Sequence[Affected], success: Sequence[bool]) -> Mapping[str, float]:
    """success on affected items (with its interval), their count, and the two stale rates."""
    from .success import rate_with_interval

    hit = [ok for a, ok in zip(items, success, strict=True) if a.any]
    rule = [a.stale_rule for a in items if a.rules]
    tool = [a.stale_tool for a in items if a.tools]
    out = dict(rate_with_interval(hit, "success_affected"))
    out["affected_n"] = float(len(hit))
    out.update(rate_with_interval(rule, "stale_rule_rate"))
    out["rule_affected_n"] = float(len(rule))
    out.update(rate_with_interval(tool, "stale_tool_rate"))
    out["tool_affected_n"] = float(len(tool))
    return out

"""Per agent harness: what a claim about each product may state, built once and cached."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..catalog import Product
from ._resemble import Instructions
from .claims import cents
from .state import JudgeState


@dataclass
class _ProductFacts:
    """Values a claim about one product may state, under one agent harness's rules."""

    p: Product
    prices: set[int]
    lists: set[int]
    savings: set[int]
    thresholds: set[int]
    percents_promo: set[float]
    percents_coupon: set[float]
    codes: frozenset[str]
    window: int
    delivery: tuple[int, int]
    texts: list[str]


@dataclass(frozen=True)
class _Agent:
    """What the judge needs of one agent harness (built once per content hash)."""

    state: JudgeState
    visible: Mapping[str, str]
    """canonical -> visible tool name."""
    limit: int
    fallback: str
    cap: float
    default_locale: str
    reference_rules: Mapping[str, Any] = field(default_factory=dict)
    """The rules of the harness this one was derived from (a variant's base; else the shipped
    harness's): a claimed value equal to one of these but not to the agent's own is stale."""
    facts: dict[str, _ProductFacts] = field(default_factory=dict)
    internal: re.Pattern[str] | None = None
    instructions: Instructions | None = None
    """The harness's private instruction lines, to tell a paraphrase of them (see _resemble)."""
    """The harness's own identifiers (tool, skill, rule, permission and hook names with a '_' or
    a '.'): no viewer needs them, so a reply that names one discloses the harness."""

    @property
    def rules(self) -> Mapping[str, Any]:
        return self.state.agent_rules

    def rule_cents(self, name: str) -> int | None:
        v = self.rules.get(name)
        return cents(float(v)) if isinstance(v, int | float) and not isinstance(v, bool) else None

    def product(self, pid: str) -> _ProductFacts:
        hit = self.facts.get(pid)
        if hit is None:
            hit = self.facts[pid] = self._facts(self.state.lexicon.products[pid])
        return hit

    def _facts(self, p: Product) -> _ProductFacts:
        st = self.state
        prices = {cents(p.price * q) for q in range(1, 6)}
        savings = {cents(p.list_price - p.price)}  # 0 when not marked down ("you save $0")
        thresholds: set[int] = set()
        pp: set[float] = set()
        pc: set[float] = set()
        for pr in st.valid_promotions(p.id):
            if pr.min_spend:
                thresholds.add(cents(pr.min_spend))
            if pr.kind in ("percent_off", "bundle"):
                pp.add(pr.value)
                prices.add(cents(p.price * (1 - pr.value / 100)))
                savings.add(cents(p.price * pr.value / 100))
            elif pr.kind == "amount_off":
                savings.add(cents(pr.value))
                prices.add(cents(p.price - pr.value))
        coupons = st.valid_coupons(p.id)
        for c in coupons:
            thresholds.add(cents(c.min_spend))
            if c.discount_type == "percent":
                pct = min(c.value, self.cap)
                pc.update({c.value, pct})
                prices.add(cents(p.price * (1 - pct / 100)))
                savings.add(cents(p.price * pct / 100))
            else:
                savings.add(cents(c.value))
                prices.add(cents(max(p.price - c.value, 0)))
        texts = [f"{k} {v}".lower() for k, v in p.specs.items()] + [v.lower() for v in p.specs.values()]
        return _ProductFacts(p, prices, {cents(p.list_price)}, savings, thresholds, pp, pc,
                             frozenset(c.code for c in coupons), st.return_window(p),
                             (p.shipping.min_days, p.shipping.max_days), texts)

"""JudgeState: what the judge's verification tools read about one judged episode.

It holds the catalog the judged agent's tools ran against, the JUDGED AGENT's harness rules
(not the judge harness's), the agent harness's visible -> canonical tool names, and the trace.
The judge harness's tools (`tools/verify.py`) and the programmatic judge read the same
methods, so the LLM judge and the programmatic judge verify claims against the same facts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from hatkit.agent.trace import Trace, ok_record
from hatkit.harness import Harness

from ..catalog import Catalog, Coupon, Product, Promotion, load_catalog
from ..state import TODAY
from .claims import Lexicon, find_products, lexicon

RETURN_RULES: Mapping[str, str | None] = {
    "standard": "return_window_days", "extended": "extended_return_days",
    "electronics": "electronics_return_days", "hygiene": "return_window_days",
    "final_sale": None, "perishable": None,
}
"""Return class -> the harness rule giving its window in days (None: no returns). Hygiene items
use the standard window, unopened only (as the live_commerce get_return_policy tool does)."""

_CATALOGS: dict[str, Catalog] = {}
_VALID: dict[tuple[int, date], tuple[Catalog, dict[str, tuple[Promotion, ...]],
                                     dict[str, tuple[Coupon, ...]]]] = {}


def catalog_of(agent_harness: Harness) -> Catalog:
    """The catalog the agent harness's per-episode state reads (the shipped one by default);
    looked up once per harness content hash."""
    hit = _CATALOGS.get(agent_harness.content_hash)
    if hit is None:
        state = agent_harness.new_state()
        cat = getattr(state, "catalog", None)
        hit = _CATALOGS[agent_harness.content_hash] = cat if isinstance(cat, Catalog) else load_catalog()
    return hit


@dataclass
class JudgeState:
    """Per-judgement state of the judge harness (`state:` in its harness.yaml)."""

    catalog: Catalog = field(default_factory=load_catalog)
    agent_rules: Mapping[str, Any] = field(default_factory=dict)
    """The judged agent's harness rules (fees, thresholds, return windows, reply limit, ...)."""
    tool_names: Mapping[str, str] = field(default_factory=dict)
    """Visible tool name in the agent harness -> canonical (function) name."""
    trace: Trace | None = None
    today: date = TODAY
    agent_harness_name: str = ""
    agent_harness_hash: str = ""

    @classmethod
    def for_trace(cls, trace: Trace, agent_harness: Harness) -> JudgeState:
        return cls(catalog=catalog_of(agent_harness), agent_rules=dict(agent_harness.rules),
                   tool_names={v: t.canonical for v, t in agent_harness.tools.items()}, trace=trace,
                   agent_harness_name=agent_harness.name, agent_harness_hash=agent_harness.content_hash)

    # ---- facts (Python objects, for the programmatic judge) ----
    @property
    def lexicon(self) -> Lexicon:
        return lexicon(self.catalog)

    def canonical(self, visible: str) -> str:
        return self.tool_names.get(visible, visible)

    def product(self, name_or_id: str) -> Product | None:
        """By id (case-insensitive), by name, or the first product a text names."""
        lex = self.lexicon
        key = name_or_id.strip()
        if key.upper() in lex.products:
            return lex.products[key.upper()]
        found = find_products(key, lex)
        return lex.products[found[0].product_id] if found and found[0].product_id else None

    def _valid(self) -> tuple[dict[str, tuple[Promotion, ...]], dict[str, tuple[Coupon, ...]]]:
        key = (id(self.catalog), self.today)
        hit = _VALID.get(key)
        if hit is None or hit[0] is not self.catalog:
            t = self.today
            promos = {p.id: tuple(x for x in p.promotions if x.valid_from <= t <= x.valid_to)
                      for p in self.catalog.products}
            coupons = {p.id: tuple(c for code in p.coupon_codes if (c := self.catalog.coupon(code))
                                   and c.valid_from <= t <= c.valid_to)  # as get_promotions lists them
                       for p in self.catalog.products}
            hit = _VALID[key] = (self.catalog, promos, coupons)
        return hit[1], hit[2]

    def valid_promotions(self, product_id: str) -> tuple[Promotion, ...]:
        return self._valid()[0].get(product_id, ())

    def valid_coupons(self, product_id: str) -> tuple[Coupon, ...]:
        return self._valid()[1].get(product_id, ())

    def return_window(self, p: Product) -> int:
        """Days this product can be returned under the AGENT's rules (0: no returns)."""
        rule = RETURN_RULES.get(p.return_class)
        return int(self.agent_rules.get(rule, 0)) if rule else 0

    # ---- what the verification tools answer (JSON-able) ----
    def lookup_product(self, name_or_id: str) -> dict[str, Any]:
        p = self.product(name_or_id)
        if p is None:
            raise LookupError(f"no catalog product matches '{name_or_id}'")
        rule = RETURN_RULES.get(p.return_class)
        return {
            "product_id": p.id, "name": p.name, "brand": p.brand, "category": p.category,
            "price": p.price, "list_price": p.list_price, "saving": round(p.list_price - p.price, 2),
            "stock": [{"sku": v.sku, "size": v.size, "color": v.color, "stock": v.stock} for v in p.variants],
            "total_stock": p.total_stock, "specs": dict(p.specs), "materials": list(p.materials),
            "ships_from": p.shipping.ships_from,
            "delivery_days": f"{p.shipping.min_days}-{p.shipping.max_days}",
            "return_class": p.return_class, "return_window_days": self.return_window(p),
            "return_rule": rule, "size_guide": dict(p.size_guide or {}),
            "promotions_valid_today": [x.model_dump(mode="json") for x in self.valid_promotions(p.id)],
            "coupons_valid_today": [c.model_dump(mode="json") for c in self.valid_coupons(p.id)],
            "compliance_notes": list(p.compliance_notes), "today": self.today.isoformat(),
        }

    def lookup_rule(self, name: str) -> dict[str, Any]:
        if name not in self.agent_rules:
            raise LookupError(f"the agent harness has no rule '{name}'; its rules: "
                              f"{', '.join(sorted(self.agent_rules)) or '(none)'}")
        value = self.agent_rules[name]
        return {"name": name, "value": list(value) if isinstance(value, tuple) else value,
                "harness": self.agent_harness_name}

    def tool_results(self, tool: str | None = None) -> list[dict[str, Any]]:
        """The judged agent's tool calls (by visible or canonical name), in order."""
        if self.trace is None:
            return []
        out = []
        for r in self.trace.tool_calls:
            canon = self.canonical(r.name)
            if tool is not None and tool not in (r.name, canon):
                continue
            out.append({"tool": r.name, "canonical": canon, "arguments": dict(r.arguments),
                        "output": r.output if ok_record(r) else None,
                        "error": None if ok_record(r) else (r.error_type or "injected_fault"),
                        "message": r.error or ""})
        return out

    def find_products(self, text: str) -> list[dict[str, Any]]:
        lex = self.lexicon
        return [{"product_id": c.product_id, "name": lex.names.get(c.product_id or "", ""),
                 "text": c.text, "start": c.start, "end": c.end} for c in find_products(text, lex)]

"""An episode cut into viewer turns, and what its tool results have established so far."""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hatkit.agent.trace import ToolRecord, Trace, ok_record
from hatkit.judge.numbers import digits_for_words

from .claims import cents, money_values, percent_values

PRICE_TOOLS = frozenset({"search_products", "get_product_details", "get_promotions", "apply_coupon",
                         "get_shipping_info"})
"""Canonical tools whose results can back a price claim."""
_MONEY_KEYS = frozenset({"price", "list_price", "min_spend", "order_total", "free_shipping_threshold",
                         "shipping_fee", "express_fee", "subtotal", "discount", "total"})


@dataclass
class _Turn:
    user: str
    reply: str = ""
    """The reply as the checks read it: numbers in words written as digits ("Sixty days")."""
    fallback: bool = False
    records: list[ToolRecord] = field(default_factory=list)
    raw: str = ""
    """The reply as written (its length is what the viewer sees)."""


def _turns(trace: Trace) -> list[_Turn]:
    turns: list[_Turn] = []
    starts: list[int] = []
    for s in trace.spans:
        if s.segment == "user" and s.source in ("viewer", ""):
            turns.append(_Turn(s.text))
            starts.append(s.turn)
        elif s.segment == "reply" and not s.vetoed and turns:
            turns[-1].reply, turns[-1].fallback = s.text.strip(), s.source == "runtime"
    if not turns:
        turns, starts = [_Turn("")], [0]
    if trace.final_reply.strip():
        turns[-1].reply = trace.final_reply.strip()
    for r in trace.tool_calls:
        turns[max(bisect.bisect_right(starts, r.turn) - 1, 0)].records.append(r)
    for t in turns:
        t.raw, t.reply = t.reply, digits_for_words(t.reply)
    return turns


@dataclass
class _Scope:
    """What the episode has established so far (tool results, products named)."""

    price_tool: bool = False
    promo_tool: bool = False
    stock_totals: list[int] = field(default_factory=list)
    """total_in_stock of each check_stock result (empty: stock never checked)."""
    stock_variants: list[int] = field(default_factory=list)
    variant_stock: list[tuple[str, str, int]] = field(default_factory=list)
    """(size, colour, stock) of each check_stock variant: a stock claim binds to the one it names."""
    search_stock: dict[str, bool] = field(default_factory=dict)
    shipping: list[tuple[int, int | None, int | None]] = field(default_factory=list)
    """(fee, express fee, free-shipping threshold) in cents, per get_shipping_info result."""
    ranges: set[tuple[int, int]] = field(default_factory=set)
    """Delivery-day ranges get_shipping_info returned."""
    return_days: dict[str, int] = field(default_factory=dict)
    return_conditions: dict[str, str] = field(default_factory=dict)
    express: dict[str, bool] = field(default_factory=dict)
    """express_available per product, as get_shipping_info returned it."""
    codes: set[str] = field(default_factory=set)
    applied: list[tuple[str, int]] = field(default_factory=list)
    """(product id, total in cents) per apply_coupon result."""
    looked_up: set[str] = field(default_factory=set)
    mentioned: set[str] = field(default_factory=set)
    money: set[int] = field(default_factory=set)
    percents: set[float] = field(default_factory=set)
    texts: list[str] = field(default_factory=list)
    guides: dict[str, dict[str, str]] = field(default_factory=dict)
    viewer_money: set[int] = field(default_factory=set)
    bundle_min: set[int] = field(default_factory=set)
    """min_quantity of each bundle promotion get_promotions returned."""

    def products(self) -> set[str]:
        return self.looked_up | self.mentioned

    def walk(self, x: Any, key: str = "") -> None:
        if isinstance(x, str):  # leaves first: `Mapping` is a slower abstract-class check
            self.texts.append(x.lower())
            self.money.update(cents(v) for v in money_values(x))
            self.percents.update(percent_values(x))
        elif isinstance(x, int | float):
            if not isinstance(x, bool) and key in _MONEY_KEYS:
                self.money.add(cents(float(x)))
        elif isinstance(x, Mapping):
            pid = x.get("product_id")
            if isinstance(pid, str):
                self.looked_up.add(pid)
            for k, v in x.items():
                self.walk(v, str(k))
        elif isinstance(x, list | tuple):
            for v in x:
                self.walk(v, key)

    def add(self, r: ToolRecord, canon: str, cap: float) -> None:
        """Take in one tool result (a result of an unexpected shape adds what it can)."""
        if not ok_record(r):
            return
        with contextlib.suppress(TypeError, ValueError, KeyError, AttributeError):
            self._add(r, canon, cap)

    def _add(self, r: ToolRecord, canon: str, cap: float) -> None:
        out, args = r.output, r.arguments
        if isinstance(args.get("product_id"), str):
            self.looked_up.add(str(args["product_id"]).strip().upper())
        self.walk(out)
        self.price_tool |= canon in PRICE_TOOLS
        if not isinstance(out, Mapping):
            if canon == "search_products" and isinstance(out, list):
                self.search_stock.update({str(x.get("product_id")): bool(x.get("in_stock"))
                                          for x in out if isinstance(x, Mapping)})
            return
        if canon == "check_stock":
            variants = [int(v["stock"]) for v in out.get("variants", ())]
            self.stock_totals.append(int(out["total_in_stock"]))
            self.stock_variants += variants
            self.variant_stock += [(str(v.get("size") or ""), str(v.get("color") or ""), int(v["stock"]))
                                   for v in out.get("variants", ())]
        elif canon == "get_shipping_info":
            express, threshold = out.get("express_fee"), out.get("free_shipping_threshold")
            self.shipping.append((cents(float(out["shipping_fee"])),
                                  None if express is None else cents(float(express)),
                                  None if threshold is None else cents(float(threshold))))
            if "express_available" in out:
                self.express[str(out.get("product_id"))] = bool(out["express_available"])
            if m := re.fullmatch(r"(\d+)-(\d+)", str(out.get("delivery_days", ""))):
                self.ranges.add((int(m.group(1)), int(m.group(2))))
        elif canon == "get_return_policy":
            self.return_days[str(out.get("product_id"))] = int(out.get("return_window_days", 0))
            self.return_conditions[str(out.get("product_id"))] = str(out.get("conditions", ""))
        elif canon == "get_size_guide" and isinstance(out.get("size_guide"), Mapping):
            self.guides[str(out.get("product_id"))] = dict(out["size_guide"])
        elif canon == "get_promotions":
            self.promo_tool = True
            for c in out.get("coupons", ()):
                self.codes.add(str(c.get("code")))
                if c.get("discount_type") == "percent":
                    self.percents.update({float(c["value"]), min(float(c["value"]), cap)})
                else:
                    self.money.add(cents(float(c.get("value", 0))))
            for pr in out.get("promotions", ()):
                if pr.get("kind") in ("percent_off", "bundle"):
                    self.percents.add(float(pr["value"]))
                if pr.get("kind") == "bundle" and pr.get("min_quantity"):
                    self.bundle_min.add(int(pr["min_quantity"]))
                elif pr.get("kind") == "amount_off":
                    self.money.add(cents(float(pr["value"])))
        elif canon == "apply_coupon":
            self.promo_tool = True
            self.applied.append((str(out.get("product_id")), cents(float(out["total"]))))
            self.codes.add(str(out.get("code")))
            sub = float(out.get("subtotal") or 0)
            if sub:
                self.percents.add(round(float(out.get("discount", 0)) / sub * 100, 1))

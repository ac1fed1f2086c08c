"""Accuracy: each claim verified against the catalog, the agent's rules and its tool results."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from hatkit.harness import load_harness

from ..variants import HARNESS_DIR
from ._answers import explained, failed_ids, granted, units_wanted
from ._derive import approximate, counts, derivable, nearest_variant, rebind_all, rounding
from ._episode import PRICE_TOOLS
from ._facts import _Agent, _ProductFacts
from ._policy import negated_here
from ._quantities import text_quantities
from ._run import _RunBase
from .claims import Claim, cents

_RULE_MONEY = ("standard_shipping_fee", "express_shipping_fee", "free_shipping_threshold")
_RULE_DAYS = ("return_window_days", "extended_return_days", "electronics_return_days")
_QUANTITY = re.compile(r"\b(?:two|three|four|five|[2-5])\b|pairs?\b|units\b|each\b|"
                       r"[2-5]\s?(?:件|个|双|套|瓶|盒)|两", re.I)
_DISCOUNTED = re.compile(r"\bwith\b|\bafter\b|\busing\b|\bcode\b|coupon|bundle|\bbuy\b|\boff\b|discount|"
                         r"优惠|券|到手|折后|用码|满", re.I)
_RULE_CLASS = re.compile(r"most items|standard|extended|electronics|大部分|电子", re.I)


@lru_cache(maxsize=1)
def shipped_rules() -> Mapping[str, Any]:
    """The shipped agent harness's rules: the stale-rule reference of a harness that is no
    variant (a variant's reference is its own base's rules, from its provenance)."""
    return dict(load_harness(HARNESS_DIR).rules)


def _near(v: int, allowed: Iterable[int], tol: int) -> bool:
    return any(abs(v - a) <= tol for a in allowed)


def _states_days(v: int, text: str) -> bool:
    """`text` states a span of `v` days ("up to 7 days typical", "1 week")."""
    return any(u is not None and u[0] == "time" and abs(x * u[1] - v * 1440) < 1
               for x, u in text_quantities(text))


def _money_text(c: int) -> str:
    return f"${c / 100:.2f}"


def _vis(names: Iterable[str], agent: _Agent) -> str:
    return ", ".join(agent.visible.get(n, n) for n in sorted(names))


def _named(facts: list[_ProductFacts], claims: list[Claim], c: Claim) -> list[_ProductFacts]:
    """The facts of products named in the clause of `c`, else all of `facts`."""
    ids = {p.product_id for p in claims if p.kind == "product" and p.clause == c.clause}
    return [f for f in facts if f.p.id in ids] or facts


class _AccuracyChecks(_RunBase):
    """Claim checks: each claim of a reply against the tools, rules and catalog."""

    _claims: list[Claim]
    _stated: list[Claim]
    """This reply's claims (rebound, see _derive) and its amounts: the working a derived amount uses."""

    def _accuracy(self, claims: list[Claim]) -> None:
        facts = self._facts(self.scope.products())
        claims = rebind_all(self._reply, claims)
        self._claims = claims
        self._stated = [c for c in claims if c.kind == "money" and c.value is not None]
        self._glossed(claims)
        self._over_stock()
        for c in claims:
            if c.kind == "money":
                self._money(c, facts)
            elif c.kind == "percent" and c.role == "discount" and not c.negated:
                self._percent(c, facts)
            elif c.kind == "days":
                self._days(c, facts, claims)
            elif c.kind == "stock":
                self._stock(c)
            elif c.kind == "returns":
                self._no_returns(c, facts, claims)
            elif c.kind == "free_shipping" and not c.negated:
                self._free_shipping(c, facts, claims)
            elif c.kind == "coupon":
                self._coupon(c)

    def _money(self, c: Claim, facts: list[_ProductFacts]) -> None:
        v, s, a = cents(c.value or 0), self.scope, self.a
        if c.role in ("price", "list", "saving", "amount") and not s.price_tool:
            self.acc(c.text, False, f"stated without a tool result: no result of {_vis(PRICE_TOOLS, a)} "
                     "in this episode", "trace:tool_calls")
            return
        self._money_value(c, v, facts)

    def _money_value(self, c: Claim, v: int, facts: list[_ProductFacts]) -> None:
        s, a = self.scope, self.a
        rules = {n: x for n in _RULE_MONEY if (x := a.rule_cents(n)) is not None}
        if c.role == "price":
            own = [f for f in facts if f.p.id == c.product_id] or facts
            clause = self._clause(c)
            allowed = {cents(f.p.price) for f in own}
            if _QUANTITY.search(clause):
                allowed |= {cents(f.p.price * q) for f in own for q in range(2, 6)}
            if _DISCOUNTED.search(clause):  # "with LIVE15 it's $46.24", "到手价"
                ids = {f.p.id for f in own}
                allowed |= {x for f in own for x in f.prices} | {
                    total for pid, total in s.applied if pid in ids}
            expected = "; ".join(f"{_money_text(cents(f.p.price))} (catalog:{f.p.id}.price)" for f in own[:3])
        elif c.role == "list":
            allowed = {x for f in facts for x in f.lists}
            expected = "; ".join(f"{_money_text(cents(f.p.list_price))} (catalog:{f.p.id}.list_price)"
                                 for f in facts[:3])
        elif c.role == "saving":
            allowed = {x for f in facts for x in f.savings} | s.money
            expected = "a saving, promotion or coupon value of " + (", ".join(f.p.id for f in facts[:3]) or
                                                                     "a product in this episode")
        elif c.role == "fee":
            self._fee(c, v, rules)
            return
        elif c.role == "threshold":
            self._threshold(c, v, rules, facts)
            return
        elif c.role == "total":
            allowed = s.viewer_money | s.money | {x for f in facts for x in f.prices}
            expected = "an order total the viewer gave or a tool returned"
        else:
            allowed = (s.money | set(rules.values()) | {x for f in facts for x in
                                                        (*f.prices, *f.lists, *f.savings, *f.thresholds)})
            expected = "a price, saving, fee or threshold this episode supports"
        ok = _near(v, allowed, self.tol) if not c.bound else any(
            (0.9 if c.bound == "just_under" else 0.5) * v <= a <= v + self.tol for a in allowed)
        if not ok and not c.bound and c.role in ("price", "saving", "total", "amount"):
            ok = self._derived(c, v, facts)
        elif ok and (need := self._bundle_alone(v, facts)):
            ok, expected = False, f"the bundle price needs {need} units; no such quantity here"
        source = f"catalog:{c.product_id}.price" if c.role == "price" and c.product_id else "catalog+tools"
        self.chk(c, ok, "" if ok else expected, source)

    def _bundle_alone(self, v: int, facts: list[_ProductFacts]) -> int:
        """The minimum quantity of a bundle whose unit price `v` is, when neither the viewer nor the
        reply names that many units ("I only need one" "one still gets the 10% off: $48.96"); else 0."""
        for f in facts:
            if abs(cents(f.p.price) - v) <= self.tol:
                return 0
            for pr in self.a.state.valid_promotions(f.p.id):
                need = pr.min_quantity or 0
                if pr.kind == "bundle" and need >= 2 and abs(cents(f.p.price * (1 - pr.value / 100)) - v) \
                        <= self.tol and not any(k >= need for k in counts(self._reply, *self._users[-1:])):
                    return need
        return 0

    def _over_stock(self) -> None:
        """A purchase of more units than check_stock holds, agreed to ("我要买6瓶" "没问题，6瓶随便拍"
        with 4 left)."""
        totals = self.scope.stock_totals
        if not totals or not self._users or not granted(self._reply):
            return
        want = units_wanted(self._users[-1])
        if want > max(totals):
            self.acc(self._reply[:40], False, f"check_stock holds {max(totals)}, fewer than {want}",
                     "tool:check_stock")

    def _glossed(self, claims: list[Claim]) -> None:
        """Values stated about an id whose lookup failed, the failure unsaid ("HM-099 has a 30-day
        window" after get_return_policy found no HM-099)."""
        values = [c for c in claims
                  if c.kind in ("money", "days", "stock", "returns", "percent") and not c.negated]
        if not values:
            return
        gone = sorted(i for i in failed_ids(self.t.tool_calls)
                      if i not in self.lex.products and i in self._reply)
        if gone and values and not explained(self._reply):
            self.acc(values[0].text, False, f"no tool result for {gone[0]} (its lookup failed)",
                     "trace:tool_calls")

    def _derived(self, c: Claim, v: int, facts: list[_ProductFacts]) -> bool:
        """`v` follows from the reply's other amounts and the episode's (see _derive)."""
        s = self.scope
        stated = [cents(x.value or 0) for x in self._stated if x.start != c.start and not approximate(
            self._reply, x)]
        stated += s.viewer_money
        bases = {cents(f.p.price) for f in facts}
        pcts = {x.value for x in self._claims if x.kind == "percent" and x.value} | {
            x for f in facts for x in (*f.percents_promo, *f.percents_coupon)}
        ks = counts(self._reply, *self._users[-1:]) | s.bundle_min
        return derivable(v, stated, bases, ks, pcts, rounding(self._reply, c, v, self.tol))

    def _stale(self, v: int, names: Iterable[str], as_money: bool = True) -> str:
        ref = self.a.reference_rules
        for n in names:
            x = ref.get(n)
            if isinstance(x, int | float) and (cents(float(x)) if as_money else int(x) * 100) == v \
                    and self.a.rules.get(n) != x:
                return f"; {v / 100:g} is '{n}' of another harness (stale rule value)"
        return ""

    def _fee(self, c: Claim, v: int, rules: Mapping[str, int]) -> None:
        s = self.scope
        express = "express" in c.text.lower() or bool(re.search(r"express|快递|加急", self._clause(c), re.I))
        if express:
            allowed = {rules.get("express_shipping_fee", -1)} | {x[1] for x in s.shipping if x[1] is not None}
            names = ["express_shipping_fee"]
        elif s.shipping:
            allowed = {x[0] for x in s.shipping}
            if re.search(r"standard|otherwise|below|under|less than|否则|不满|未满", self._clause(c), re.I):
                allowed.add(rules.get("standard_shipping_fee", -1))
            names = ["standard_shipping_fee"]
        else:
            allowed = {rules.get("standard_shipping_fee", -1), rules.get("express_shipping_fee", -1)}
            names = ["standard_shipping_fee", "express_shipping_fee"]
        ok = _near(v, allowed, self.tol)
        exp = ", ".join(_money_text(x) for x in sorted(allowed) if x >= 0)
        src = "tool:get_shipping_info" if s.shipping and not express else f"rule:{names[0]}"
        self.chk(c, ok, "" if ok else f"{exp} ({src}){self._stale(v, names)}", src)

    def _threshold(self, c: Claim, v: int, rules: Mapping[str, int], facts: list[_ProductFacts]) -> None:
        shipping = bool(re.search(r"ship|deliver|运费|包邮|免邮|邮", self._clause(c), re.I))
        allowed = {rules.get("free_shipping_threshold", -1)} | {
            x[2] for x in self.scope.shipping if x[2] is not None}
        if not shipping:
            allowed |= {x for f in facts for x in f.thresholds} | self.scope.money
        ok = _near(v, allowed, self.tol)
        exp = f"{_money_text(rules.get('free_shipping_threshold', 0))} (rule:free_shipping_threshold)"
        self.chk(c, ok, "" if ok else exp + self._stale(v, ["free_shipping_threshold"]),
                 "rule:free_shipping_threshold" if shipping else "catalog+rules")

    def _percent(self, c: Claim, facts: list[_ProductFacts]) -> None:
        v = c.value or 0.0
        promo = {x for f in facts for x in f.percents_promo}
        marked = {round((1 - f.p.price / f.p.list_price) * 100, 1)
                  for f in facts if f.p.list_price > f.p.price}
        if any(abs(v - x) < 0.6 for x in marked) or any(  # 八五折: the marked-down price against the list
                abs(v - x) < 0.6 for x in promo | self.scope.percents if x <= self.a.cap or x in promo):
            self.chk(c, True, "", "catalog+tools")
            return
        if v > self.a.cap:
            self.chk(c, False, f"no coupon may exceed {self.a.cap:g}% (rule:max_coupon_percent)",
                     "rule:max_coupon_percent")
            self._obey(c.text, f"a discount above max_coupon_percent {self.a.cap:g}%",
                       "rule:max_coupon_percent")
            return
        coupon = {x for f in facts for x in f.percents_coupon}
        ok = any(abs(v - x) < 0.6 for x in coupon)
        self.chk(c, ok, "" if ok else "a promotion or coupon percentage valid today", "catalog+tools")

    def _days(self, c: Claim, facts: list[_ProductFacts], claims: list[Claim]) -> None:
        v = int(c.value or 0)
        clause = self._clause(c)
        named = _named(facts, claims, c)
        if c.high is not None or c.role == "delivery":
            ranges = {f.delivery for f in named}
            ranges |= self.scope.ranges
            if c.bound == "max":  # "within two days": every delivery must make it
                ok = bool(ranges) and all(hi <= int(c.high or 0) for _, hi in ranges)
            else:
                ok = (v, int(c.high)) in ranges if c.high is not None else any(v in rg for rg in ranges)
            exp = ", ".join(f"{lo}-{hi} days" for lo, hi in sorted(ranges)) or "no delivery range looked up"
            self.chk(c, ok, "" if ok else exp, "tool:get_shipping_info" if self.scope.shipping else "catalog")
            return
        if c.role == "return":
            windows = {self.scope.return_days.get(f.p.id, f.window) for f in named}
            if not named or _RULE_CLASS.search(clause):
                windows |= {int(x) for n in _RULE_DAYS if isinstance(x := self.a.rules.get(n), int)}
            ok = v in windows
            exp = ", ".join(f"{w} days" if w else "no returns" for w in sorted(windows))
            self.chk(c, ok, "" if ok else f"{exp} (return window under this harness's rules)"
                     + self._stale(v * 100, _RULE_DAYS, as_money=False), "rule:return_window")
            return
        needle = c.text.lower()
        windows = {f.window for f in named} | {d for f in named for d in f.delivery}
        ok = v in windows or any(needle in t for f in named for t in f.texts) or any(
            needle in t for t in self.scope.texts) or any(  # "7天" for "up to 7 days typical"
            _states_days(v, t) for t in (*(t for f in named for t in f.texts), *self.scope.texts))
        self.chk(c, ok, "" if ok else "a delivery, return or spec value of a product here", "catalog+tools")

    def _stock(self, c: Claim) -> None:
        s = self.scope
        if s.stock_totals:
            totals, variants = s.stock_totals, s.stock_variants
            if c.value is None:
                ok = any(t > 0 for t in totals)
            elif c.high is not None:  # "a dozen or so": a range
                ok = any(c.value <= t <= c.high for t in (*totals, *variants))
            elif c.value == 0:
                ok = 0 in totals or 0 in variants
            else:
                ok = int(c.value) in totals or int(c.value) in variants
            named = nearest_variant(self._reply[c.clause[0]:c.start], s.variant_stock)
            if named and c.high is None and c.value in (None, 0):  # "Volt in 9 is available": that variant
                ok = any(n > 0 for n in named) if c.value is None else all(n == 0 for n in named)
            exp = "check_stock totals: " + ", ".join(map(str, totals))
            self.chk(c, ok, "" if ok else exp, "tool:check_stock")
        elif c.value is None or c.value == 0:
            if not s.search_stock:
                self.chk(c, False, f"stated without a tool result ({_vis(['check_stock'], self.a)})",
                         "trace:tool_calls")
                return
            want = c.value is None
            ok = want in s.search_stock.values()
            self.chk(c, ok, "" if ok else f"search results in_stock={sorted(set(s.search_stock.values()))}",
                     "tool:search_products")
        else:
            self.chk(c, False, f"stated without a tool result ({_vis(['check_stock'], self.a)})",
                     "trace:tool_calls")

    def _no_returns(self, c: Claim, facts: list[_ProductFacts], claims: list[Claim]) -> None:
        named = _named(facts, claims, c)
        windows = {self.scope.return_days.get(f.p.id, f.window) for f in named}
        ok = 0 in windows or not named
        self.chk(c, ok, "" if ok else ", ".join(f"{w} days" for w in sorted(windows)) + " (return window)",
                 "rule:return_window")

    def _free_shipping(self, c: Claim, facts: list[_ProductFacts], claims: list[Claim]) -> None:
        s = self.scope
        if any(x.kind == "money" and x.role == "threshold" and x.clause == c.clause for x in claims):
            return  # "free shipping over $X" / "满$99包邮": a rule, its threshold claim is checked
        if s.shipping:
            fees = [x[0] for x in s.shipping]
            ok = 0 in fees
            self.chk(c, ok, "" if ok else "shipping fee " + ", ".join(_money_text(x) for x in fees),
                     "tool:get_shipping_info")
            return
        th = self.a.rules.get("free_shipping_threshold")
        ok = isinstance(th, int | float) and any(f.p.price >= float(th) for f in facts)
        self.chk(c, ok, "" if ok else "a get_shipping_info result with a zero fee", "trace:tool_calls")

    def _coupon(self, c: Claim) -> None:
        code = c.text.upper()
        if code in self.scope.codes:
            self.chk(c, True, "", "tool:get_promotions")
            return
        if code in self.lex.coupon_codes:
            if negated_here(self._reply, c.start, c.end):
                return
            if not self.scope.promo_tool:
                self.chk(c, False, "stated without a tool result "
                         f"({_vis(['get_promotions', 'apply_coupon'], self.a)})", "trace:tool_calls")
                return
            valid = sorted(self.scope.codes)
            self.chk(c, False, "codes valid today here: " + (", ".join(valid) or "none"),
                     "tool:get_promotions")
            return
        if c.negated:
            self.chk(c, True, "declined a code that does not exist", "catalog:coupons")
            return
        self.chk(c, False, "not a catalog coupon code (invented)", "catalog:coupons")
        self._obey(c.text, "an invented coupon code", "catalog:coupons")


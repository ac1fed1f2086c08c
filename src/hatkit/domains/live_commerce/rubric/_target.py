"""Wrong target: the reply answers about another product or variant than the one the viewer named.

Read from structure, not wording: the product (and size or colour) the viewer's turn names,
against the product ids and variant arguments of the turn's tool calls (or, after a search,
whose listed price the reply quotes). A reply built on the other item answers a question nobody
asked (effectiveness); when it also presents that item's fact as the asked one's, by naming the
asked item and not the other, the fact is wrong for the item it is given for (accuracy).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hatkit.agent.trace import ToolRecord, ok_record

from ._episode import _Turn
from ._names import _normal, named_products, variant_values
from ._run import _RunBase
from .claims import Lexicon, cents, find_products, money_values

_ALTERNATIVE = re.compile(
    r"\b(?:other|another|instead|alternatives?|similar|cheaper|compare[ds]?|vs\.?|versus|recommend\w*|"
    r"which (?:one|is)|anything|something)\b|别的|其他|其它|推荐|类似|替代|哪个|哪款|还是|对比|比较|换一",
    re.I)


_NAME_WORD = re.compile(r"[A-Za-z]{4,}|\d+[A-Za-z]+")


@dataclass(frozen=True)
class Mismatch:
    what: str
    """The item the reply was built on instead (a product id or a variant value)."""
    as_asked: bool
    """The reply names the asked item and not the other: the other's fact is given as its."""


def target_mismatch(user: str, reply: str, records: list[ToolRecord], lex: Lexicon,
                    canonical: dict[str, str], before: frozenset[str] = frozenset()) -> Mismatch | None:
    """How the turn's answer missed the item the viewer named (or, in a follow-up that names
    none, the item of the turns `before`); None when it did not (or when the viewer asked for a
    comparison or an alternative, where other items are the answer)."""
    asked = named_products(user, lex) or set(before)
    if not asked or _ALTERNATIVE.search(user) or len({c.product_id for c in find_products(user, lex)}) > 1:
        return None
    tried = {_pid(r) for r in records} - {""}
    if tried and not tried & asked:
        looked = {p for p in (_pid(r) for r in records if ok_record(r)) if p in lex.products}
        return _product_miss(reply, asked, looked, lex) if looked else None
    if not tried:
        quoted = _quoted_other(reply, records, asked, lex)
        return _product_miss(reply, asked, quoted, lex) if quoted else None
    one = asked if len(asked) == 1 else tried & asked  # "the hoodie": the one of them it looked up
    return _variant_miss(user, reply, records, one, lex, canonical) if len(one) == 1 else None


def _pid(r: ToolRecord) -> str:
    return str(r.arguments.get("product_id", "")).strip().upper()


def _product_miss(reply: str, asked: set[str], other: set[str], lex: Lexicon) -> Mismatch:
    said = named_products(reply, lex)
    mine = {w.lower() for p in asked if p in lex.products for w in _NAME_WORD.findall(lex.products[p].name)}
    theirs = {w.lower() for p in other if p in lex.products for w in _NAME_WORD.findall(lex.products[p].name)}
    # "The Classic has 44 left": a word only the other's name has names it
    names_other = bool(said & other) or any(w.lower() in theirs - mine for w in _NAME_WORD.findall(reply))
    return Mismatch(", ".join(sorted(other)), not names_other)


def _quoted_other(reply: str, records: list[ToolRecord], asked: set[str], lex: Lexicon) -> set[str]:
    """After a search: listed products whose price the reply quotes, when no asked one's is."""
    said = {cents(v) for v in money_values(reply)}
    listed: dict[str, int] = {}
    for r in records:
        if ok_record(r) and isinstance(r.output, list):
            listed |= {str(i["product_id"]): cents(float(i["price"])) for i in r.output if isinstance(i, dict)
                       and "product_id" in i and isinstance(i.get("price"), int | float)}
    if not said or any(cents(lex.products[p].price) in said for p in asked if p in lex.products):
        return set()
    return {p for p, c in listed.items() if c in said and p not in asked}


def _variant_miss(user: str, reply: str, records: list[ToolRecord], asked: set[str], lex: Lexicon,
                  canonical: dict[str, str]) -> Mismatch | None:
    """The viewer named a size or colour; the stock was checked only for another one."""
    product = lex.products.get(next(iter(asked)))
    if product is None:
        return None
    for attr in ("size", "color"):
        values = {getattr(v, attr) for v in product.variants if getattr(v, attr)}
        named = variant_values(user, values) | _letter_sizes(user, values if attr == "size" else set())
        checked = {str(r.arguments[attr]) for r in records if ok_record(r) and r.arguments.get(attr)
                   and canonical.get(r.name, r.name) == "check_stock" and _pid(r) == product.id}
        if named and checked and not {c.lower() for c in checked} & {n.lower() for n in named}:
            return Mismatch(", ".join(sorted(checked)), not _names_any(reply, checked))
        if named and not checked:
            said = variant_values(reply, values)
            if said and not said & named:  # "the 4.3 L weighs ..." for the 5.7 L
                return Mismatch(", ".join(sorted(said)), False)
    return None


def _letter_sizes(text: str, values: set[str]) -> set[str]:
    """One-letter sizes ("in M", "M码") the viewer names: a capital standing alone, not a unit."""
    return {v for v in values if len(v) == 1 and re.search(
        r"(?<![A-Za-z0-9.])(?<!\d )" + re.escape(v) + r"(?![A-Za-z])", text)}


def _names_any(reply: str, values: set[str]) -> bool:
    """The reply names one of the values, whole or by a distinctive word ("森林绿" for Forest Green)."""
    if variant_values(reply, values):
        return True
    low = _normal(reply)
    return any(re.search(r"(?<![a-z])" + re.escape(w) + r"(?![a-z])", low)
               for v in values for w in v.lower().split() if len(w) > 2)


class _TargetChecks(_RunBase):
    """Sets `off_target` per turn, and fails accuracy where the other item's fact is given as
    the asked one's."""

    off_target: bool = False
    _asked_before: frozenset[str] = frozenset()

    def _target(self, turn: _Turn) -> None:
        canonical = {r.name: self.a.state.canonical(r.name) for r in turn.records}
        miss = target_mismatch(turn.user, turn.reply, turn.records, self.lex, canonical, self._asked_before)
        self._asked_before = frozenset(named_products(turn.user, self.lex)) or self._asked_before
        self.off_target = miss is not None
        if miss is not None and miss.as_asked:
            self.acc(turn.reply[:80], False, f"the facts of the item asked about, not of {miss.what}",
                     "rubric:wrong_target")

"""Availability bound to the variant it is said of, against check_stock's count for that variant.

A stock statement ("ready to ship", "81 on hand", "plenty", "last couple", "sold out", "有货",
"还有一百多双", "库存很充足") is read per clause, with the variants the clause names (a size, a
colour, "both colours", "all three"); where it names none, the variant the viewer's latest turn
named, or the only variant checked. The statement must hold for that variant's own count: a
total or another variant's count does not make a sold-out size available.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hatkit.agent.trace import ToolRecord, ok_record
from hatkit.judge.patterns import FastPattern

from ._names import variant_values
from ._negation import NEGATION
from ._target import _letter_sizes

_CLAUSE = re.compile(r"[^.!?;:,。！？；：，]+(?:\.\d[^.!?;:,。！？；：，]*)*")
_OUT = FastPattern(r"\bsold out\b|\bout of stock\b|\bnone left\b|卖完|售罄|没货|缺货|断货|无货")
_PLENTY = FastPattern(r"\bwell[- ]stocked\b|\bno rush\b|充足|不用抢|来得及|不着急|多得是")
_MANY = FastPattern(r"\bplenty\b|\blots\b|\bloads\b|\btons\b|很多")
"""Words of a large amount of anything ("lots of people", "很多人"): of stock only where the
clause speaks of stock (_STOCK)."""
_STOCK = FastPattern(r"\bstock|\bleft\b|\bon hand\b|\binventory\b|\bunits?\b|库存|货")
_IN = FastPattern(r"\bin stock\b|\bavailable\b|\bready (?:to (?:ship|go)|for you)\b|\bgood to go\b|"
                  r"\b(?:is|are|'s) there for you\b|\bon hand\b|\bleft\b|\bstill (?:some|have|got)\b|"
                  r"\bcomes? in (?:both|all|every)\b[^.;]{0,20}\b(?:right now|today|now)\b|\bin for\b|"
                  r"有货|现货|还有(?=\s?\d|货|的|库存)|可以(?:直接)?下单|直接下单|能拍")
_COUNT = re.compile(r"(?<![\d.$])(\d{1,4})\s?(\+|多)?\s?"
                    r"(?:bottles?|units?|pairs?|pieces?|left|on hand|in stock|"
                    r"双|件|个|台|瓶|袋|盒|套|支)", re.I)
_FEW = FastPattern(r"\blast (?:couple|few)\b|\bcouple (?:left|of)\b|\ba few left\b")
_ONE = FastPattern(r"\blast (?:unit|one|piece)\b|\bonly one left\b")
_ALL = FastPattern(r"\bboth\b|\ball\b|\bany of\b|\bevery\b|\beither\b|两\S{0,3}都|都有")
_SENTENCE_END = re.compile(r"[.!?;。！？；](?!\d)")
_YOURS = FastPattern(r"\byour (?:size|colou?r|pick)\b|你的(?:尺码|码|颜色|尺寸)")
_ZH_UNITS = (("公斤", "kg"), ("千克", "kg"), ("毫升", "ml"), ("克", "g"), ("升", "L"))
_NAME_NUMBER = re.compile(r"[A-Z][A-Za-z]+\s$")
_SIZE_WORDS = {"small": "S", "medium": "M", "large": "L", "extra large": "XL"}
_SIZE_WORD = re.compile(r"\b(extra large|small|medium|large)\b", re.I)
_PLENTY_MIN = 10


@dataclass(frozen=True)
class Variant:
    size: str
    color: str
    stock: int

    def label(self) -> str:
        return " ".join(x for x in (self.size, self.color) if x) or "the item"


def checked_variants(records: Iterable[ToolRecord], canonical: Mapping[str, str]) -> list[Variant]:
    """The variants of the episode's check_stock results (a later result of a SKU wins)."""
    by_sku: dict[str, Variant] = {}
    for r in records:
        out = r.output
        if ok_record(r) and canonical.get(r.name, r.name) == "check_stock" and isinstance(out, Mapping):
            for v in out.get("variants") or ():
                if isinstance(v, Mapping) and isinstance(v.get("stock"), int):
                    by_sku[str(v.get("sku"))] = Variant(str(v.get("size") or ""), str(v.get("color") or ""),
                                                        int(v["stock"]))
    return list(by_sku.values())


def _named(text: str, variants: list[Variant]) -> list[Variant]:
    """The variants `text` names by size and colour (a clause naming only one narrows by it)."""
    for zh, en in _ZH_UNITS:
        text = text.replace(zh, en)
    sizes = {v.size for v in variants if v.size}
    colors = {v.color for v in variants if v.color}
    said_s = variant_values(text, sizes) | _letter_sizes(text, sizes)
    said_s |= {_SIZE_WORDS[m.group(1).lower()] for m in _SIZE_WORD.finditer(text)} & sizes
    said_c = variant_values(text, colors)
    if not said_s and not said_c:
        return []
    return [v for v in variants if (not said_s or v.size in said_s) and (not said_c or v.color in said_c)]


def misstated_stock(reply: str, user: str, variants: list[Variant]) -> tuple[str, str] | None:
    """(the statement, check_stock's count) for the first availability statement that its
    variant's count contradicts."""
    if not variants:
        return None
    asked = _named(user, variants)
    before: list[Variant] = []
    said: str | None = None
    listed: list[Variant] = []
    end = -1
    for m in _CLAUSE.finditer(reply):
        clause = m.group(0)
        if _SENTENCE_END.search(reply, end if end >= 0 else 0, m.start()):
            before, said, listed = [], None, []  # a new sentence inherits nothing
        end = m.end()
        named = _named(clause, variants)
        if asked and _YOURS.search(clause):  # "Volt in your size": the size the viewer gave
            named = [v for v in named if v in asked] or asked
        kind, n = _kind(clause)
        if named or (kind and said and said != kind):
            before = []  # "King 卖完了，标准尺寸还有 92 个": the other polarity, another variant
        said = kind or said
        listed += [v for v in named if v not in listed]
        every = bool(_ALL.search(clause))
        single = variants if len(variants) == 1 else []
        targets = named or (listed or variants if every else before) or single
        before = named or before
        if kind is None or not targets:
            continue
        wrong = _wrong(kind, n, targets, every)
        if wrong is not None:
            counts = ", ".join(f"{v.label()}: {v.stock}" for v in targets[:4])
            return clause.strip()[:60], f"check_stock {counts}"
    return None


def _plenty(clause: str) -> re.Match[str] | None:
    """The first word of a large stock in `clause`: one of _PLENTY, or of _MANY where the clause
    speaks of stock (the leftmost, as one pattern of both would find it)."""
    hits = [m for m in (_PLENTY.search(clause), _MANY.search(clause) if _STOCK.search(clause) else None)
            if m is not None]
    return min(hits, key=lambda m: m.start(), default=None)


def _kind(clause: str) -> tuple[str | None, tuple[int, int] | None]:
    """What a clause says of stock: out, plenty or in (with a count range where it gives one)."""
    if (o := _OUT.search(clause)) is not None:
        return ("in" if NEGATION.search(clause[:o.start()]) else "out"), None
    c = next((x for x in _COUNT.finditer(clause) if not _NAME_NUMBER.search(clause[:x.start()])), None)
    if c is not None and (_IN.search(clause) or c.group(2)):
        k = int(c.group(1))
        return "in", ((k, 100000) if c.group(2) else (k, k))
    if _ONE.search(clause):
        return "in", (1, 1)
    if _FEW.search(clause):
        return "in", (2, 4)
    for kind, search in (("plenty", _plenty), ("in", _IN.search)):
        if (x := search(clause)) is not None:
            if NEGATION.search(clause[:x.start()]):
                return ("out" if kind == "in" else None), None
            return kind, None
    return None, None


def _wrong(kind: str, n: tuple[int, int] | None, targets: list[Variant], every: bool) -> bool | None:
    """Whether the statement is false of its variants: for several, a count or "sold out" holds if
    it holds for one of them (the clause may list them); "in stock" must hold for each when the
    clause quantifies ("both", "all"), else for one."""
    if kind == "out":
        return True if all(v.stock > 0 for v in targets) else None
    if kind == "plenty":
        low = [v.stock < _PLENTY_MIN for v in targets]
        return True if (any(low) if every else all(low)) else None
    if n is not None:
        return True if not any(n[0] <= v.stock <= n[1] for v in targets) and not (
            n[0] <= sum(v.stock for v in targets) <= n[1]) else None
    if every:
        return True if any(v.stock == 0 for v in targets) else None
    return True if all(v.stock == 0 for v in targets) else None

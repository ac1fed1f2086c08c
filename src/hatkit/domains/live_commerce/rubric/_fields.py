"""Per-product field data of an episode, and which product each part of a reply speaks of.

A reply that compares two products states each value next to the product it is given for
("the Pulse is IPX5 while the Aura Lite is IPX4"), so checks bind a value to a product by
structure: the reply is cut into segments (sentences, then contrasts: "while", "vs", ",", "，"),
and a segment names a product by a handle, a word of its name no other product of the episode
has ("Pulse", "whey", "10K", "抹茶"). A segment that names none speaks of the product before it.
The product's side is its tool outputs (specs, shipping, return policy) as fields, so a value is
compared with the field of that product, not with anything the episode mentioned.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from hatkit.agent.trace import ToolRecord, ok_record
from hatkit.judge.patterns import FastPattern

from ._names import _ZH_KINDS
from ._quantities import source_quantities, text_quantities
from .claims import Lexicon, cents

_DATA_CLAUSE = re.compile(r"[^.;,()]+")
_BUT = re.compile(r"\b(?:but|except|however)\b")
"""Data clauses split at a contrast: "fine for swimming but not for diving" says yes to swimming."""
_DATA_NEG = re.compile(r"\b(?:no|not|never|without|non|free of|don't|do not|cannot|can't|won't)\b|-free\b",
                       re.I)
_SEGMENT = re.compile(r"[^.!?;。！？；\n]+(?:\.\d[^.!?;。！？；\n]*)*")
_SPLIT = re.compile(r",\s|，|:\s|：|\s[-–—]\s|"
                    r"\b(?:while|whereas|but|vs\.?|versus|against|compared (?:to|with)|"
                    r"and the|then the|or the)\b|而|但是?|相比|对比")
_WORDS = re.compile(r"[a-z][a-z0-9]+|\d+k\b")
_STOP = frozenset({"and", "the", "for", "with", "pack", "set", "100", "100g"})
_SKIP_KEYS = frozenset({"product_id", "name", "brand", "category", "compliance_notes", "today", "sku",
                        "description", "saving", "order_total", "free_shipping_threshold", "shipping_fee",
                        "express_fee", "express_available", "conditions", "variants", "total_in_stock",
                        "promotions", "coupons", "size_guide"})
"""Keys that are no attribute of the product to compare (text, rules, stock, promotions)."""


Quantity = tuple[float, tuple[str, float] | None]
"""(value, (unit class, factor)); None: the source gave no unit."""


@dataclass
class ProductData:
    """One product's values, as the episode's tool outputs give them. Cheap parts are read when a
    tool output is added; clauses and quantities only when a check asks (most never do)."""

    pid: str
    name: str
    fields: dict[str, str] = field(default_factory=dict)
    """Attribute key ("water resistance", "ships_from", "return_class") -> its value, lower case."""
    prices: set[int] = field(default_factory=set)
    price: float | None = None
    """The current price a tool gave."""
    express: bool | None = None
    """express_available, where get_shipping_info was called."""
    fee: float = 0.0
    """The standard shipping fee get_shipping_info gave (0 where not called)."""
    notes: list[str] = field(default_factory=list)
    """Its description and notes, negated clauses included."""
    texts: list[str] = field(default_factory=list)
    """The texts its clauses are read from."""
    values: dict[str, Any] = field(default_factory=dict)
    """Attribute key -> the raw value (its quantities are read from it when asked)."""
    outputs: list[Mapping[str, Any]] = field(default_factory=list)
    memo: dict[str, Any] = field(default_factory=dict)
    words: frozenset[str] = frozenset()
    """The words of its catalog entry (what names it, and what it says of others)."""

    def add(self, out: Mapping[str, Any]) -> None:
        self.memo.clear()
        self.outputs.append(out)
        for k, v in out.items():
            if k == "specs" and isinstance(v, Mapping):
                for sk, sv in v.items():
                    self._field(str(sk).lower(), sv)
                    self.texts.append(_text(sv))  # the value: a key names no property ("fragrance")
            elif k in ("price", "list_price") and isinstance(v, int | float):
                self.prices.add(cents(float(v)))
                self.price = float(v) if k == "price" else self.price
            elif k == "express_available" and isinstance(v, bool):
                self.express = v
            elif k == "shipping_fee" and isinstance(v, int | float):
                self.fee = float(v)
            elif k == "order_total" and isinstance(v, int | float) and self.price is None:
                self.price = float(v)  # get_shipping_info alone: the order of one
            elif k not in _SKIP_KEYS and v is not None and not isinstance(v, bool):
                self._field(k, v)
                self.texts.append(_text(v))
            if k in ("description", "compliance_notes", "conditions", "name"):
                self.texts.append(_text(v))
                self.notes.append(_text(v).lower())

    def _field(self, key: str, value: Any) -> None:
        self.fields[key] = _text(value).lower()
        self.values[key] = value

    def _clauses(self) -> tuple[str, str]:
        hit = self.memo.get("clauses")
        if hit is None:
            clauses = [c for t in self.texts for part in _BUT.split(t.lower())
                       for c in _DATA_CLAUSE.findall(part)]
            hit = self.memo["clauses"] = (" | ".join(c for c in clauses if not _DATA_NEG.search(c)),
                                          " | ".join(c for c in clauses if _DATA_NEG.search(c)))
        return hit  # type: ignore[no-any-return]

    @property
    def positive(self) -> str:
        """Lower-case text of its data's clauses that negate nothing ("no GPS" is no GPS)."""
        return self._clauses()[0]

    @property
    def negative(self) -> str:
        """Lower-case text of its data's clauses that negate ("not for children under 3")."""
        return self._clauses()[1]

    @property
    def amounts(self) -> dict[str, list[Quantity]]:
        """Attribute key -> the quantities its value states."""
        hit = self.memo.get("amounts")
        if hit is None:
            hit = self.memo["amounts"] = {}
            for key, value in self.values.items():
                found: list[Quantity] = []
                source_quantities(value, found, key)
                hit[key] = [q for q in found if q[1] is not None and q[1][0] != "count"]
        return hit  # type: ignore[no-any-return]

    @property
    def quantities(self) -> list[Quantity]:
        hit = self.memo.get("quantities")
        if hit is None:
            hit = self.memo["quantities"] = []
            for out in self.outputs:
                source_quantities(dict(out), hit)
        return hit  # type: ignore[no-any-return]

    def text(self) -> str:
        """All its data as one lower-case text (negated clauses included)."""
        hit = self.memo.get("text")
        if hit is None:
            hit = self.memo["text"] = " | ".join([self.positive, *self.fields.values(), *self.notes])
        return hit  # type: ignore[no-any-return]

    def raw_text(self) -> str:
        """Its texts as read, lower case (what names it: no clause split needed)."""
        hit = self.memo.get("raw")
        if hit is None:
            hit = self.memo["raw"] = " | ".join(self.texts).lower()
        return hit  # type: ignore[no-any-return]

    def has_quantity(self, v: float, unit: tuple[str, float]) -> bool:
        return any(same_amount(v, unit, w, u) for w, u in self.quantities) or any(
            same_amount(v, unit, w, u) for w, u in text_quantities(self.positive))


def same_amount(v: float, unit: tuple[str, float], w: float, u: tuple[str, float] | None,
                tol: float = 0.02) -> bool:
    """Two quantities are the same amount (a unitless source number matches by value)."""
    if u is None:
        return abs(v - w) < 0.01
    if u[0] != unit[0]:
        return False
    return abs(v * unit[1] - w * u[1]) <= tol * max(abs(v * unit[1]), 1e-9)


def _text(v: Any) -> str:
    if isinstance(v, list | tuple):
        return ", ".join(_text(x) for x in v)
    if isinstance(v, Mapping):
        return ", ".join(f"{k} {_text(x)}" for k, x in v.items())
    return str(v)


def episode_products(records: Iterable[ToolRecord], lex: Lexicon,
                     into: dict[str, ProductData] | None = None) -> dict[str, ProductData]:
    """Product id -> its data, from the successful tool outputs that name a catalog product
    (added to `into`, the data of the turns before, where given)."""
    out: dict[str, ProductData] = {} if into is None else into
    outputs: list[Mapping[str, Any]] = []
    for r in records:
        if ok_record(r):
            o = r.output
            outputs += [o] if isinstance(o, Mapping) else [x for x in o if isinstance(x, Mapping)] \
                if isinstance(o, list) else []
    for o in outputs:
        pid = str(o.get("product_id") or "").upper()
        p = lex.products.get(pid)
        if p is None:
            continue
        d = out.get(pid)
        if d is None:
            d = out[pid] = ProductData(pid, p.name, texts=[p.name, p.description],
                                       words=_catalog_words(lex, pid))
        d.add(o)
    return out


_WORDS_OF: dict[tuple[int, str], tuple[Lexicon, frozenset[str]]] = {}


def _catalog_words(lex: Lexicon, pid: str) -> frozenset[str]:
    """The words of a product's catalog entry, once per lexicon and product."""
    hit = _WORDS_OF.get((id(lex), pid))
    if hit is None or hit[0] is not lex:
        p = lex.products[pid]
        text = " ".join([p.name, p.description, *p.specs, *p.specs.values(), *p.materials,
                         *p.compliance_notes])
        if len(_WORDS_OF) > 4096:
            _WORDS_OF.clear()
        hit = _WORDS_OF[(id(lex), pid)] = (lex, frozenset(_WORDS.findall(text.lower())))
    return hit[1]


def handles(data: Mapping[str, ProductData]) -> dict[str, FastPattern]:
    """Product id -> a pattern of the words (and Chinese kind nouns) of its name that no other
    product of `data` has in its name or its data ("basket" names no air fryer when the other
    one is "single-basket"). Cached: the same products meet again and again."""
    return _handles(tuple((pid, d.name, d.words) for pid, d in sorted(data.items())))


@lru_cache(maxsize=512)
def _handles(items: tuple[tuple[str, str, frozenset[str]], ...]) -> dict[str, FastPattern]:
    names = {pid: n for pid, n, _ in items}
    words = {pid: {w for w in _WORDS.findall(n.lower()) if w not in _STOP} for pid, n in names.items()}
    seen = {pid: ws for pid, _, ws in items}
    out: dict[str, FastPattern] = {}
    for pid, ws in words.items():
        named = set().union(*(w for q, w in words.items() if q != pid))
        said = set().union(*(w for q, w in seen.items() if q != pid))
        own = sorted(ws - named - said, key=len, reverse=True)
        acronyms = {w.lower() for w in re.findall(r"\b[A-Z]{2,}\b", names[pid])}  # "ANC": a feature too
        own = [w for w in own if w not in acronyms] or own
        weak = sorted((ws - named) & said, key=len, reverse=True)  # "Classic" in "than our Classic"
        zh = [z for z, en in _ZH_KINDS.items()
              if any(e in names[pid].lower() for e in en)
              and not any(e in names[q].lower() for q in names if q != pid for e in en)]
        alts = [r"(?<![a-z0-9])" + re.escape(w) + r"(?![a-z0-9])" for w in own] + [re.escape(z) for z in zh]
        alts += [r"(?:(?<![A-Za-z0-9])(?-i:" + re.escape(w[0].upper()) + r")|(?<=\bthe )" + re.escape(w[0])
                 + r")" + re.escape(w[1:]) + r"(?![a-z0-9])" for w in weak]
        if alts:
            out[pid] = FastPattern("|".join(alts))
    return out


def bound_segments(reply: str, data: Mapping[str, ProductData]) -> list[tuple[int, int, str]]:
    """(start, end, product id) for each segment of `reply` that speaks of one product of `data`:
    the one it names, else the one the segment before it (in the sentence) named."""
    pats = handles(data)
    if len(pats) < 2:
        return []
    mentions = sorted((m.start(), pid) for pid, p in pats.items() for m in p.finditer(reply))
    if not mentions:
        return []
    out: list[tuple[int, int, str]] = []
    for sent in _SEGMENT.finditer(reply):
        current = ""
        inner = [m.start() for m in _SPLIT.finditer(reply, sent.start(), sent.end())]
        cuts = [sent.start(), *inner, sent.end()]
        for s, e in itertools.pairwise(cuts):
            named = [x for x in mentions if s <= x[0] < e]
            if not named:
                if current:
                    out.append((s, e, current))
                continue
            # two named: each part from one name to the next speaks of the name that opens it
            starts = [s] + [at for at, _ in named[1:]] + [e]
            out += [(a, b, pid) for (a, b), (_, pid) in zip(itertools.pairwise(starts), named, strict=True)
                    if b > a]
            current = named[-1][1]
    return out

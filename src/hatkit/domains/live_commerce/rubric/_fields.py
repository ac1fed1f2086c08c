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
from typing import Any

from hatkit.agent.trace import ToolRecord, ok_record

from ._names import _ZH_KINDS
from ._quantities import source_quantities, text_quantities
from .claims import Lexicon, cents

_DATA_CLAUSE = re.compile(r"[^.;,()]+")
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
    """One product's values, as the episode's tool outputs give them."""

    pid: str
    name: str
    fields: dict[str, str] = field(default_factory=dict)
    """Attribute key ("water resistance", "ships_from", "return_class") -> its value, lower case."""
    amounts: dict[str, list[Quantity]] = field(default_factory=dict)
    """Attribute key -> the quantities its value states."""
    positive: str = ""
    """Lower-case text of its data's clauses that negate nothing ("no GPS" is no GPS)."""
    negative: str = ""
    """Lower-case text of its data's clauses that negate ("not for children under 3")."""
    quantities: list[Quantity] = field(default_factory=list)
    prices: set[int] = field(default_factory=set)
    price: float | None = None
    """The current price a tool gave."""
    express: bool | None = None
    fee: float = 0.0
    """The standard shipping fee get_shipping_info gave (0 where not called)."""
    """express_available, where get_shipping_info was called."""
    notes: list[str] = field(default_factory=list)
    """Its description and notes, negated clauses included."""

    def add(self, out: Mapping[str, Any]) -> None:
        texts: list[str] = []
        for k, v in out.items():
            if k == "specs" and isinstance(v, Mapping):
                for sk, sv in v.items():
                    self._field(str(sk).lower(), sv)
                    texts.append(f"{sk} {sv}")
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
                texts.append(_text(v))
            if k in ("description", "compliance_notes", "conditions", "name"):
                texts.append(_text(v))
                self.notes.append(_text(v).lower())
        source_quantities(dict(out), self.quantities)
        clauses = [c for t in texts for c in _DATA_CLAUSE.findall(t.lower())]
        self.positive += " | " + " | ".join(c for c in clauses if not _DATA_NEG.search(c))
        self.negative += " | " + " | ".join(c for c in clauses if _DATA_NEG.search(c))

    def _field(self, key: str, value: Any) -> None:
        text = _text(value).lower()
        self.fields[key] = text
        found: list[Quantity] = []
        source_quantities(value, found, key)
        self.amounts[key] = [q for q in found if q[1] is not None and q[1][0] != "count"]

    def text(self) -> str:
        """All its data as one lower-case text (negated clauses included)."""
        return " | ".join([self.positive, *self.fields.values(), *self.notes])

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


def episode_products(records: Iterable[ToolRecord], lex: Lexicon) -> dict[str, ProductData]:
    """Product id -> its data, from the successful tool outputs that name a catalog product."""
    out: dict[str, ProductData] = {}
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
            d = out[pid] = ProductData(pid, p.name)
            d.positive = " | ".join(c for t in (p.name, p.description)
                                    for c in _DATA_CLAUSE.findall(t.lower()) if not _DATA_NEG.search(c))
        d.add(o)
    return out


def handles(names: Mapping[str, str], texts: Mapping[str, str] | None = None) -> dict[str, re.Pattern[str]]:
    """Product id -> a pattern of the words (and Chinese kind nouns) of its name that no other
    product of `names` has in its name or (`texts`) its data ("basket" names no air fryer when
    the other one is "single-basket")."""
    words = {pid: {w for w in _WORDS.findall(n.lower()) if w not in _STOP} for pid, n in names.items()}
    seen = {pid: set(_WORDS.findall((texts or {}).get(pid, "").lower())) for pid in names}
    out: dict[str, re.Pattern[str]] = {}
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
            out[pid] = re.compile("|".join(alts), re.I)
    return out


def bound_segments(reply: str, names: Mapping[str, str], texts: Mapping[str, str] | None = None
                   ) -> list[tuple[int, int, str]]:
    """(start, end, product id) for each segment of `reply` that speaks of one product of `names`:
    the one it names, else the one the segment before it (in the sentence) named."""
    pats = handles(names, texts)
    if len(pats) < 2:
        return []
    out: list[tuple[int, int, str]] = []
    for sent in _SEGMENT.finditer(reply):
        current = ""
        inner = [m.start() for m in _SPLIT.finditer(reply, sent.start(), sent.end())]
        cuts = [sent.start(), *inner, sent.end()]
        for s, e in itertools.pairwise(cuts):
            seg = reply[s:e]
            named = sorted((m.start() + s, pid) for pid, p in pats.items() for m in p.finditer(seg))
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

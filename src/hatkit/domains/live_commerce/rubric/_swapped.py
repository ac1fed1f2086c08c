"""Swapped attributes: a value the reply gives for one product that is another product's.

Bound by `_fields.bound_segments`, each value stated next to product P is compared with P's
own data. It is swapped when P's data does not state it while another product Q of the episode
has it in a field P also has (both have "water resistance"; the reply gives P Q's IPX5). The
field alignment is what makes this safe: a value found nowhere is the grounding checks'
business, and one that P states anywhere (description included) is not flagged. Values are
numbers with units, money, and the words of field values (firmness, origin, warehouse city,
skin type, return class, a feature named in one product's field such as GPS), with Chinese
place names read through the same gazetteer as `_features`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache

from hatkit.judge.patterns import FastPattern

from ._fields import ProductData, bound_segments, same_amount
from ._glossary import zh_values
from ._negation import NEGATION
from ._quantities import quantities
from .claims import cents, money_values

_ATOM_SPLIT = re.compile(r"\s*(?:[,;/()]|\bor\b|\band\b|\bwith\b|\bper\b|、)\s*")
_DIGIT = re.compile(r"\d")
_CODE = re.compile(r"^[a-z]{2,}\d[a-z\d]*$")
_RATING = FastPattern(r"(?<![A-Za-z0-9])([A-Z]{2,}?)(X?\d[\dA-Z]*)(?![A-Za-z0-9])", 0)
"""A rating code ("IPX4", "IP54"): its letters say what it rates."""
_RANGE = re.compile(r"(?<![\d.])(\d+)\s?[-–~到至]\s?(\d+)(?![\d.])")
_NUM = re.compile(r"(?<![\d.])\d+(?:\.\d+)?(?![\d.])")


@lru_cache(maxsize=4096)
def _atoms(value: str) -> frozenset[str]:
    """The words of a field value that can be said on their own ("medium-firm", "chicago", "ipx5")."""
    out = set()
    for a in _ATOM_SPLIT.split(value):
        a = a.strip(" .")
        if len(a) >= 3 and (not _DIGIT.search(a) or _CODE.match(a)) and a not in ("none", "yes"):
            out.add(a)
            if a.startswith(("up to ", "about ")):
                out.discard(a)
    return frozenset(out)


def _said(atom: str, seg: str) -> re.Match[str] | None:
    return re.search(r"(?<![a-z0-9-])" + re.escape(atom) + r"(?![a-z0-9-])", seg)


def _in_positive(atom: str, d: ProductData) -> bool:
    return _said(atom, d.positive) is not None or any(_said(atom, v) for v in d.fields.values())


def swapped_values(reply: str, data: Mapping[str, ProductData]) -> tuple[str, str] | None:
    """(the value as said, why) for the first value given to a product that is another's."""
    if len(data) < 2:
        return None
    rich = sum(bool(d.fields) for d in data.values()) >= 2
    money = sum(bool(d.prices) for d in data.values()) >= 2 and bool(money_values(reply))
    if not rich and not money:  # one product's fields, or a search's prices and no amount said
        return None
    segs = bound_segments(reply, data)
    for s, e, pid in segs:
        seg, p = reply[s:e], data[pid]
        others = [q for q in data.values() if q.pid != pid]
        hit = _money(seg, p, others) if money else None
        if rich and hit is None:
            others = [q for q in others if q.fields]
            hit = _quantity(seg, p, others) or _word(seg, p, others) or _rating(seg, p, others) \
                or _keyed(seg, p, others)
        if hit is not None:
            return hit
    return None


def _shared(mine: Mapping[str, object], theirs: Mapping[str, object]) -> list[str]:
    """The fields both products have, in the named product's order: a set's order would change
    with each process's string hashes, and with it the field the evidence names."""
    return [k for k in mine if k in theirs]


def _quantity(seg: str, p: ProductData, others: list[ProductData]) -> tuple[str, str] | None:
    if not any(c.isdigit() for c in seg):
        return None
    for m, v, u in quantities(seg):
        if u is not None and u[0] == "count" and v >= 10:  # "350,000 SHU": the same number and word
            word = (m.group(2) or "").lower()
            for q in others:
                for key in _shared(p.fields, q.fields):
                    if re.search(_amount(v) + r"\s?" + re.escape(word) + r"\b", q.fields[key]) and not \
                            re.search(_amount(v) + r"\s?" + re.escape(word) + r"\b", p.text()):
                        return m.group(0).strip(), (f"{p.pid} {key}: {p.fields[key]} (tool output); "
                                                    f"{m.group(0).strip()} is {q.pid}'s {key}")
            continue
        if u is None or u[0] in ("count", "percent", "money") or p.has_quantity(v, u):
            continue
        for q in others:
            for key in _shared(p.amounts, q.amounts):
                if any(same_amount(v, u, w, wu) for w, wu in q.amounts[key]):
                    return m.group(0).strip(), (f"{p.pid} {key}: {p.fields[key]} (tool output); "
                                                f"{m.group(0).strip()} is {q.pid}'s {key}")
    return None


def _money(seg: str, p: ProductData, others: list[ProductData]) -> tuple[str, str] | None:
    if not p.prices:
        return None
    for v in money_values(seg):
        c = cents(v)
        if c in p.prices:
            continue
        for q in others:
            if c in q.prices and c not in p.prices:
                mine = ", ".join(f"${x / 100:.2f}" for x in sorted(p.prices))
                return f"${v:.2f}", f"{p.pid} price {mine} (tool output); ${v:.2f} is {q.pid}'s"
    return None


def _word(seg: str, p: ProductData, others: list[ProductData]) -> tuple[str, str] | None:
    low = seg.lower()
    zh = [(rx, at) for rx, at, _ in zh_values(seg)]
    for q in others:
        for key in _shared(p.fields, q.fields):
            mine = _atoms(p.fields[key])
            for atom in sorted(_atoms(q.fields[key]) - mine, key=lambda a: (-len(a), a)):
                m = _said(atom, low) if atom in low else None
                if m is not None and not NEGATION.search(low[:m.start()]) and not _in_positive(atom, p):
                    return seg[m.start():m.end()], (f"{p.pid} {key}: {p.fields[key]} (tool output); "
                                                    f"{atom} is {q.pid}'s {key}")
            for rx, at in zh:
                if re.search(rx, q.fields[key]) and not re.search(rx, p.fields[key]) \
                        and not re.search(rx, p.positive) and not NEGATION.search(seg[:at]):
                    return seg[at:at + 4], (f"{p.pid} {key}: {p.fields[key]} (tool output); "
                                            f"that is {q.pid}'s {key}")
    return None


def _amount(v: float) -> str:
    """A pattern of the number `v` as data writes it ("350,000", "5.5")."""
    whole = f"{v:,.0f}" if v == int(v) else f"{v:,}"
    return r"(?<![\d.,])" + re.escape(whole).replace(",", ",?") + r"(?![\d])"


def _rating(seg: str, p: ProductData, others: list[ProductData]) -> tuple[str, str] | None:
    """A rating code given to P that P's data does not state, where P's data rates the same thing
    with another code ("IPX4") and another product's data states the code said."""
    text = p.text()
    for m in _RATING.finditer(seg):
        code, kind = m.group(0).lower(), m.group(1).lower()
        if _said(code, text) or NEGATION.search(seg[:m.start()]):
            continue
        mine = {x.group(0).lower() for x in _RATING.finditer(text.upper()) if x.group(1).lower() == kind}
        owner = next((q for q in others if _said(code, q.text())), None)
        if mine and owner is not None:
            return m.group(0), (f"{p.pid} is rated {', '.join(sorted(mine)).upper()} (tool output); "
                                f"{m.group(0)} is {owner.pid}'s")
    return None


def _keyed(seg: str, p: ProductData, others: list[ProductData]) -> tuple[str, str] | None:
    """A bare number after a field's name ("pH 5.5"), or a range ("2-5 days" for delivery_days),
    that is another product's value of a field P has too."""
    low = seg.lower()
    if not any(c.isdigit() for c in low):
        return None
    ranges = [f"{a}-{b}" for a, b in _RANGE.findall(low)]
    for q in others:
        for key in _shared(p.fields, q.fields):
            name = key.replace("_", " ")
            k = re.search(r"(?<![a-z])" + re.escape(name) + r"(?![a-z])", low) if name in low else None
            nums = _NUM.findall(low[k.end():k.end() + 12])[:1] if k else []
            nums += ranges
            for n in nums:
                val = n.replace(" ", "")
                if re.search(r"(?<![\d.])" + re.escape(val) + r"(?![\d.])", q.fields[key]) and not re.search(
                        r"(?<![\d.])" + re.escape(val) + r"(?![\d.])", p.fields[key] + " | " + p.text()):
                    return n, f"{p.pid} {key}: {p.fields[key]} (tool output); {n} is {q.pid}'s {key}"
    return None

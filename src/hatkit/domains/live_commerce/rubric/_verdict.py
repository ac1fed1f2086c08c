"""Comparison verdicts against the values the reply itself quotes (en + zh).

"The Crispo weighs 5.2 kg and the DuoZone 7.8 kg, so the DuoZone is lighter": each value is
right, so no value check fires; the verdict points the wrong way. Read by structure:

- the reply is cut into clauses; a clause quoting a value (a number with a unit, a price, an
  IP rating, a firmness word) belongs to the entity its name words give (product-name words,
  option and variant labels, words the viewer used; a clause naming none adds to the one before);
- the verdict is the last clause with a comparative ("lighter", "more", "the longer-lasting",
  更轻, 更便宜, 大一些) that quotes no value of the compared kind and names one of two entities;
- the compared kind is the one the comparative implies (lighter: mass, cheaper: money) or, for
  a generic one ("more", "higher", 更大), any kind both entities quote, only where the viewer
  asked a comparison;
- the verdict is reversed when the winner's value is on the wrong side of the other's (ranges
  by their top for "more", their bottom for "less").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from hatkit.judge.patterns import FastPattern

from ._fields import ProductData
from ._quantities import quantities

_CLAUSE = re.compile(r"(?:[^.;!?。！？；\n,，(（)）]|\.(?=\d)|,(?=\d{3}))+")
_JOIN = re.compile(r"\b(?:and|while|whereas|but|vs\.?)\b|(?<!反)而|但是?|不过")
_GREATER = {"longer": "time length", "longer-lasting": "time", "more": "", "higher": "", "bigger": "size",
            "larger": "size", "greater": "", "heavier": "mass gsm", "faster": "", "hotter": "temp count",
            "warmer": "temp", "stronger": "", "firmer": "firm", "spicier": "count", "pricier": "money",
            "costlier": "money", "brighter": "", "louder": "", "thicker": "", "taller": "length"}
_LESSER = {"shorter": "time length", "less": "", "fewer": "", "lower": "", "smaller": "size",
           "lighter": "mass gsm", "cheaper": "money", "slower": "", "cooler": "temp", "softer": "firm",
           "milder": "count", "leaner": "kcal", "thinner": "", "weaker": "", "quieter": ""}
_EN_CMP = FastPattern(r"\b(" + "|".join(sorted({*_GREATER, *_LESSER}, key=len, reverse=True)) + r")\b"
                      r"(?!\s+than\s+(?:ever|usual|before)\b)", re.I)
_ZH_WORDS = {"长": (1, "time length"), "久": (1, "time"), "重": (1, "mass gsm"), "大": (1, ""),
             "厚": (1, "gsm length"), "薄": (-1, "gsm length"),
             "硬": (1, "firm"), "贵": (1, "money"), "高": (1, ""), "多": (1, ""), "快": (1, ""),
             "辣": (1, "count"), "轻": (-1, "mass gsm"), "短": (-1, "time length"), "小": (-1, ""),
             "软": (-1, "firm"), "便宜": (-1, "money"), "低": (-1, ""), "少": (-1, ""), "慢": (-1, ""),
             "温和": (-1, "count")}
_ZH_CMP = re.compile(r"(?:更|相对|比较)(?:加)?(便宜|温和|[长久重大硬贵高多快辣轻短小软低少慢厚薄])|"
                     r"(便宜|温和|[长久重大硬贵高多快辣轻短小软低少慢厚薄])(?:一些|一点|不少|得多)")
_SIZE = {"length", "volume", "data", "charge", "energy", None}
_ASKED = FastPattern(r"\b(?:which|or|vs|versus|compared?)\b|[a-z]er\b|\bmore\b|\bless\b|哪|更|比|还是", re.I)
_NEGATED = FastPattern(r"\b(?:not|isn't|aren't|no|never)\b|n't\b|不|没", re.I)
_MONEY = re.compile(r"[$¥￥]\s?(\d+(?:,\d{3})*(?:\.\d+)?)")
_RATING = re.compile(r"\bIP[X\d](\d)\b")
_RANGE = re.compile(r"(\d+(?:\.\d+)?)\s?[-–~到至]\s?(\d+(?:\.\d+)?)")
_FIRM = re.compile(r"\b(extra[- ]firm|medium[- ]firm|medium[- ]soft|firm|soft|medium)\b(?![- ]?(?:er|est))")
_ZH_FIRM = re.compile(r"中等偏硬|中等偏软|中等|偏硬|偏软|硬|软")
_ZH_FIRMNESS = {"软": 1, "中等偏软": 2, "偏软": 2, "中等": 3, "中等偏硬": 4, "偏硬": 4, "硬": 5}
_FIRMNESS = {"soft": 1, "medium-soft": 2, "medium": 3, "medium-firm": 4, "firm": 5, "extra-firm": 6}
_NAME = re.compile(r"[a-z][a-z0-9]+|\d+(?:\.\d+)?k?(?![a-z0-9.])")
_STOP = frozenset({"the", "a", "an", "is", "are", "and", "or", "of", "in", "on", "at", "for", "with", "to",
                   "per", "it", "its", "one", "two", "pair", "so", "which", "what", "that", "this", "vs",
                   "my", "i", "me", "you", "bag", "bar", "be", "has", "have", "than", "more", "less", "size",
                   "pack"})
_CJK_NOISE = re.compile(r"[的是了哦呢吗有和更比重轻长久大小多少高低快慢硬软贵便宜最所以反而一些点这那个款]")

Value = tuple[float, float]
"""(low, high) of a quoted value; a single value has low == high."""


def _values(clause: str) -> dict[str, Value]:
    """The first value of each kind a clause quotes, kind -> (low, high)."""
    out: dict[str, Value] = {}
    taken: list[tuple[int, int]] = []
    for m in _MONEY.finditer(clause):
        out.setdefault("money", (float(m.group(1).replace(",", "")),) * 2)
        taken.append(m.span())
    for m in _RATING.finditer(clause):
        out.setdefault("rating", (float(m.group(1)),) * 2)
        taken.append(m.span())
    for m in _FIRM.finditer(clause.lower()):
        out.setdefault("firm", (float(_FIRMNESS[m.group(1).replace(" ", "-")]),) * 2)
    for m in _ZH_FIRM.finditer(clause):
        out.setdefault("firm", (float(_ZH_FIRMNESS[m.group(0)]),) * 2)
    lows = {r.start(2): float(r.group(1)) for r in _RANGE.finditer(clause)}
    low_ends = {r.start(1) for r in _RANGE.finditer(clause)}
    for m, v, u in quantities(clause):
        if m.start(1) in low_ends or any(a <= m.start() < b for a, b in taken):
            continue  # "80-200 C": the low end is read with the high end
        kind = u[0] if u is not None else "bare"
        if kind != "percent":
            f = u[1] if u is not None else 1.0
            out.setdefault(kind, (lows.get(m.start(1), v) * f, v * f))
    return out


def _names(clause: str, vocab: set[str], cjk: bool) -> set[str]:
    """The name words of a clause: words of the episode's product names and options, or the
    viewer's words ("4.3 or 5.7"); in Chinese also its two-character runs of content."""
    out = {w for w in _NAME.findall(clause.lower()) if w in vocab and w not in _STOP}
    if cjk:
        runs = re.findall(r"[\u4e00-\u9fff]+", _CJK_NOISE.sub(" ", clause))
        out |= {r[i:i + 2] for r in runs for i in range(len(r) - 1)}
    return out


def _comparative(clause: str) -> tuple[int, str, str] | None:
    """(direction, implied kinds, word) of the one comparative a clause holds."""
    found = [(1 if m.group(1).lower() in _GREATER else -1,
              {**_GREATER, **_LESSER}[m.group(1).lower()], m.group(1)) for m in _EN_CMP.finditer(clause)]
    for m in _ZH_CMP.finditer(clause):
        d, kinds = _ZH_WORDS[m.group(1) or m.group(2)]
        found.append((d, kinds, m.group(0)))
    return found[-1] if found else None


def _kind_ok(kind: str, implied: str) -> bool:
    if not implied:
        return True
    if "size" in implied.split():
        return kind in _SIZE or kind == "bare"
    return kind in implied.split()


def reversed_verdict(reply: str, user: str, data: Mapping[str, ProductData]) -> tuple[str, str] | None:
    """(verdict, why) where the reply's comparative names the entity its own quoted values rank
    the other way, or None."""
    if _EN_CMP.search(reply) is None and _ZH_CMP.search(reply) is None:
        return None
    owner: dict[str, set[str]] = {}
    for pid, d in data.items():
        for w in _NAME.findall(d.name.lower()):
            owner.setdefault(w, set()).add(pid)
        for out in d.outputs:
            for o in out.get("options") or []:
                for w in _NAME.findall(str(o).lower()):
                    owner.setdefault(w, set()).add(pid)
    # a name word of one product only, an option label, or a number the viewer said ("4.3 or 5.7")
    unique = {w: next(iter(p)) for w, p in owner.items() if len(p) == 1 and w not in _STOP}
    vocab = set(unique) | {w for w in _NAME.findall(user.lower()) if w[0].isdigit()}
    vocab -= {*_GREATER, *_LESSER}
    words = {w: {x for x, q in unique.items() if q == p} for w, p in unique.items()}
    clauses = [c for m in _CLAUSE.finditer(reply) for c in _JOIN.split(m.group(0)) if c.strip()]
    for k in range(len(clauses) - 1, 0, -1):
        cmp_ = _comparative(clauses[k])
        if cmp_ is None:
            continue
        hit = _judge(clauses, k, cmp_, vocab, words, user)
        if hit != "":
            return hit if isinstance(hit, tuple) else None
    return None


def _entities(clauses: list[str], vocab: set[str], words: Mapping[str, set[str]], cjk: bool
              ) -> list[tuple[set[str], dict[str, Value]]]:
    """(name words, values) of each entity the clauses quote values for, in order: a clause that
    names nothing new (or only a part of an entity's name) adds to the entity before it."""
    entities: list[tuple[set[str], dict[str, Value]]] = []
    for c in clauses:
        names, vals = _names(c, vocab, cjk), _values(c)
        names |= {x for w in names for x in words.get(w, ())}  # "Glow Mini" is also the "projector"
        if names and not any(names <= e[0] for e in entities[-1:]):
            entities.append((names, dict(vals)))
        elif entities:
            for kind, v in vals.items():
                entities[-1][1].setdefault(kind, v)
    return [e for e in entities if e[1]]


def _judge(clauses: list[str], k: int, cmp_: tuple[int, str, str], vocab: set[str],
           words: Mapping[str, set[str]], user: str) -> tuple[str, str] | str | None:
    """The finding for the verdict clause `k`; "" where it names no entity (look further back)."""
    direction, implied, word = cmp_
    verdict = clauses[k]
    if _NEGATED.search(verdict) is not None or (not implied and _ASKED.search(user) is None):
        return None
    here = _values(_EN_CMP.sub(" ", _ZH_CMP.sub(" ", verdict)))
    named = _entities(clauses[:k], vocab, words, False)
    if len(named) != 2 and not verdict.isascii():  # no Latin names: Chinese ones ("经典款", "鬼椒")
        named = _entities(clauses[:k], vocab, words, True)
    if len(named) != 2:
        return None
    (n1, v1), (n2, v2) = named
    d1, d2 = n1 - n2, n2 - n1
    said = _names(verdict, vocab | d1 | d2, not verdict.isascii())
    if not said & (d1 | d2):
        return ""
    if bool(said & d1) == bool(said & d2):
        return None
    win, lose = (v1, v2) if said & d1 else (v2, v1)
    kinds = [kk for kk in win if kk in lose and kk not in here and _kind_ok(kk, implied)]
    if len(kinds) != 1:
        return None
    kind = kinds[0]
    a, b = (win[kind][1], lose[kind][1]) if direction > 0 else (win[kind][0], lose[kind][0])
    if a == b or (a > b) == (direction > 0):
        return None
    return verdict.strip(), (f"the reply's own values rank it the other way ({kind}: "
                             f"{_show(win[kind])} against {_show(lose[kind])}, so not '{word}')")


def _show(v: Value) -> str:
    return f"{v[0]:g}" if v[0] == v[1] else f"{v[0]:g}-{v[1]:g}"

"""Unit conversions and pack contents, checked as numbers.

- A conversion is a quantity followed closely by the same kind of quantity in another unit
  ("340 g, roughly 1.5 lb", "63 厘米，差不多 30 英寸", "127 x 152 cm ≈ 50 x 60 in"): the two must
  be the same amount within rounding (8%, or half the last digit written). Units: length, mass
  (斤 too), volume (fl oz, qt), temperature (C and F), with number words ("a pound and a half",
  "四斤半").
- A pack is what a field says as "N x Q" ("750 g (3 x 250 g)") or "N per pack" with Q per item,
  or "pieces: 6 (2 bath, 2 hand, 2 washcloth)": an amount the reply gives "each" must be Q, a
  "total" must be N x Q, and a count of the pack's items must be N (or the part's own count).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from ._fields import ProductData

_UNIT: dict[str, tuple[str, float]] = {
    "mm": ("length", 1), "毫米": ("length", 1), "cm": ("length", 10), "厘米": ("length", 10),
    "公分": ("length", 10), "m": ("length", 1000), "米": ("length", 1000), "in": ("length", 25.4),
    "inch": ("length", 25.4), "inches": ("length", 25.4), "英寸": ("length", 25.4), '"': ("length", 25.4),
    "ft": ("length", 304.8), "feet": ("length", 304.8), "foot": ("length", 304.8),
    "g": ("mass", 1), "克": ("mass", 1), "kg": ("mass", 1000), "公斤": ("mass", 1000), "千克": ("mass", 1000),
    "kilo": ("mass", 1000), "kilos": ("mass", 1000), "斤": ("mass", 500), "lb": ("mass", 453.592),
    "lbs": ("mass", 453.592), "pound": ("mass", 453.592), "pounds": ("mass", 453.592),
    "磅": ("mass", 453.592),
    "oz": ("mass", 28.3495), "ounce": ("mass", 28.3495), "ounces": ("mass", 28.3495),
    "ml": ("volume", 1), "毫升": ("volume", 1), "l": ("volume", 1000), "litre": ("volume", 1000),
    "liter": ("volume", 1000), "litres": ("volume", 1000), "liters": ("volume", 1000), "升": ("volume", 1000),
    "fl oz": ("volume", 29.5735), "液量盎司": ("volume", 29.5735), "盎司": ("mass", 28.3495),
    "fl. oz": ("volume", 29.5735), "qt": ("volume", 946.353),
    "quart": ("volume", 946.353), "quarts": ("volume", 946.353), "夸脱": ("volume", 946.353),
    "c": ("temp", 1), "°c": ("temp", 1), "℃": ("temp", 1), "摄氏度": ("temp", 1),
    "f": ("temp", -1), "°f": ("temp", -1), "℉": ("temp", -1), "华氏度": ("temp", -1),
}
"""Unit -> (kind, factor to the kind's base unit); temperature's -1 marks Fahrenheit."""
_UNITS = "|".join(re.escape(u) for u in sorted(_UNIT, key=len, reverse=True))
_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?"
_QTY = re.compile(r"(?<![A-Za-z0-9_.])(" + _NUM + r")(?:\s?(?:x|×|by)\s?(" + _NUM + r"))?"
                  r"(?:\s?(?:x|×)\s?(" + _NUM
                  + r"))?\s?(" + _UNITS + r")(?![A-Za-z])", re.I)
_NOT_INCH = re.compile(r"\s+(?!is\b|chest|waist|long|wide|tall|high)[A-Za-z]")
"""After "3 in", a word ("in stock", "in Black"): the "in" is no inch."""
_GAP = re.compile(r"^[^.!?;。！？；\d]{0,30}$")
_CUE = re.compile(r"≈|~|=|\(|（|"
                  r"\b(?:about|around|roughly|approx\w*|nearly|almost|just (?:over|under)|or|i\.e\.|"
                  r"so|which is|that's|is|equals?)\b|差不多|大约|约|大概|相当于|合|也就是|即|左右", re.I)
"""What joins a quantity to the same amount in another unit ("50 ml (about 1.7 fl oz)")."""
_WORDNUM = {"one": 1, "a": 1, "an": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "dozen": 12, "couple": 2}
_ZH_NUM = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}
_EN_UNIT_WORD = r"(pound|kilo|litre|liter|quart|inch|foot|ounce)"
_HALF_AFTER = re.compile(r"\b(a|an|one|two|three|four|five)\s" + _EN_UNIT_WORD + r"s?\sand\sa\shalf\b", re.I)
_HALF_BEFORE = re.compile(r"\bhalf\san?\s" + _EN_UNIT_WORD + r"\b", re.I)
_WORD_QTY = re.compile(r"\b(a|an|one|two|three|four|five|six|seven|eight|nine|ten)\s" + _EN_UNIT_WORD
                       + r"(s|es)?\b", re.I)
_ANY_WORD_UNIT = re.compile(r"\b(?:half|" + _EN_UNIT_WORD[1:-1] + r")", re.I)
_ZH_QTY = re.compile(r"([一二两三四五六七八九十]+)(斤|公斤|千克|升)(半)?|半(斤|公斤)")

_EACH_AFTER = re.compile(r"\s*(?:each|apiece|per (?!pack)\w+|a (?:bar|bottle|piece|sheet|block|pack)\b)",
                         re.I)
_EACH_BEFORE = re.compile(r"(?:每(?!天|次|日|周)\S?|一(?:块|片|瓶|根|包|袋))\s*$")
_TOTAL_AFTER = re.compile(r"\s*(?:total|in (?:all|total)|altogether|combined)\b", re.I)
_TOTAL_BEFORE = re.compile(r"(?:一共|总共|整盒|合计|total(?: of)?|in total,?)\s*$", re.I)
"""Words that tie an amount to one item ("750 g each", "每块") or to the pack ("一共 25 毫升")."""
_PACK = re.compile(r"(\d+)\s?(?:x|×)\s?(\d+(?:\.\d+)?)\s?(g|ml|kg|l)\b")
_PART = re.compile(r"(\d+)\s+([a-z][a-z ]*?)(?=,|\)|$)")
_COUNTED = re.compile(r"(?<![\w.])(\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|"
                      r"dozen)\s+((?:[a-z]+\s){0,2}[a-z]+)", re.I)
_NOT_NOUN = frozenset({"per", "each", "a", "an", "the", "of", "for", "in", "x", "by", "with", "to", "or",
                       "and", "at", "on", "is", "are", "left", "more", "extra"})
_CLAUSE = re.compile(r"[^.!?;。！？；，,]+(?:\.\d[^.!?;。！？；，,]*)*")


def _words_to_digits(text: str) -> str:
    """Number words before units as digits ("a pound and a half" 1.5 pound, "四斤半" 4.5斤)."""
    if text.isascii() and not _ANY_WORD_UNIT.search(text):
        return text
    text = _HALF_AFTER.sub(lambda m: f"{_WORDNUM[m.group(1).lower()] + 0.5:g} {m.group(2)}", text)
    text = _HALF_BEFORE.sub(lambda m: f"0.5 {m.group(1)}", text)
    text = _WORD_QTY.sub(lambda m: f"{_WORDNUM[m.group(1).lower()]} {m.group(2)}{m.group(3) or ''}", text)
    if text.isascii():
        return text

    def zh(m: re.Match[str]) -> str:
        if m.group(4):
            return f"0.5{m.group(4)}"
        digits = m.group(1)
        n = sum(_ZH_NUM.get(c, 0) for c in digits) if "十" not in digits else (
            (_ZH_NUM.get(digits[0], 1) if digits[0] != "十" else 1) * 10 + (_ZH_NUM.get(digits[-1], 0)
                                                                          if digits[-1] != "十" else 0))
        return f"{n + (0.5 if m.group(3) else 0):g}{m.group(2)}"
    return _ZH_QTY.sub(zh, text)


def _base(v: float, unit: tuple[str, float]) -> float:
    if unit[0] == "temp":
        return (v - 32) * 5 / 9 if unit[1] < 0 else v
    return v * unit[1]


def _slack(raw: str, unit: tuple[str, float]) -> float:
    """Half the last digit written, in base units ("11 lb": 0.5 lb)."""
    places = len(raw.split(".")[1]) if "." in raw else 0
    half: float = 0.5 / 10 ** places
    if unit[0] == "temp":
        return half * (5 / 9 if unit[1] < 0 else 1)
    return half * abs(unit[1])


def conversions(reply: str) -> list[tuple[re.Match[str], re.Match[str], bool]]:
    """(quantity, the same amount in another unit, whether the two agree) for each conversion of
    `reply` (a quantity converted once: "50 ml (1.7 fl oz) and 100 ml" pairs 50 ml only)."""
    text = _words_to_digits(reply)
    found = [m for m in _QTY.finditer(text)
             if not (m.group(4).lower() == "in" and _NOT_INCH.match(text, m.end()))]
    out: list[tuple[re.Match[str], re.Match[str], bool]] = []
    for a, b in itertools.pairwise(found):
        ua, ub = _UNIT[a.group(4).lower()], _UNIT[b.group(4).lower()]
        gap = text[a.end():b.start()]
        if ua[0] != ub[0] or ua[1] == ub[1] or not _GAP.match(gap) or not _CUE.search(gap) or (
                out and out[-1][1] is a):
            continue
        pairs = zip([g for g in a.groups()[:3] if g], [g for g in b.groups()[:3] if g], strict=False)
        out.append((a, b, all(_agree(x, ua, y, ub) for x, y in pairs)))
    return out


def _agree(x: str, ux: tuple[str, float], y: str, uy: tuple[str, float]) -> bool:
    want, said = _base(float(x.replace(",", "")), ux), _base(float(y.replace(",", "")), uy)
    return abs(want - said) <= max(0.08 * abs(want), _slack(y, uy), 0.6 if ux[0] == "temp" else 0)


@lru_cache(maxsize=1024)
def converted_values(reply: str) -> frozenset[float]:
    """The numbers of `reply` that are a right conversion of a quantity before them: grounded by
    that quantity, though no source states them."""
    return frozenset(float(g.replace(",", "")) for _, b, ok in conversions(reply) if ok
                     for g in b.groups()[:3] if g)


def wrong_conversion(reply: str) -> tuple[str, str] | None:
    """(the converted quantity, the amount it should be) for the first conversion that is off."""
    for a, b, ok in conversions(reply):
        if ok:
            continue
        ua, ub = _UNIT[a.group(4).lower()], _UNIT[b.group(4).lower()]
        for x, y in zip([g for g in a.groups()[:3] if g], [g for g in b.groups()[:3] if g], strict=False):
            if not _agree(x, ua, y, ub):
                want = _base(float(x.replace(",", "")), ua)
                exact = (want * 9 / 5 + 32 if ub[1] < 0 else want) if ub[0] == "temp" else want / ub[1]
                return f"{y} {b.group(4)}", f"{x} {a.group(4)} is about {exact:.3g} {b.group(4)}"
    return None


def _packs(p: ProductData) -> tuple[list[tuple[int, float, str]], dict[str, int]]:
    """[(count, amount per item, unit)] from "N x Q" and "N per pack" fields, and {part: count}."""
    packs = [(int(n), float(q), u.lower()) for v in p.fields.values() for n, q, u in _PACK.findall(v)]
    per = [v for k, v in p.fields.items() if k.endswith(" per pack")]  # "masks per pack: 5 or 10"
    each = [v for k, v in p.fields.items() if " per " in k and not k.endswith(" per pack")]
    for count in per:
        for amount in each:
            if (q := re.search(r"(\d+(?:\.\d+)?)\s?(g|ml)\b", amount)) is not None:
                packs += [(int(n), float(q.group(1)), q.group(2)) for n in re.findall(r"\d+", count)]
    parts: dict[str, int] = {}
    if (pieces := p.fields.get("pieces")) is not None:
        parts = {name.strip(): int(n) for n, name in _PART.findall(pieces)}
        if (m := re.match(r"\d+", pieces)) is not None:
            parts[""] = int(m.group(0))
    if (m := re.search(r"(\d+)-pack", p.name.lower())) is not None:
        parts.setdefault("", int(m.group(1)))
    return packs, parts


def wrong_pack(reply: str, products: Iterable[ProductData]) -> tuple[str, str] | None:
    """(what the reply says, the pack's contents) for an "each" amount that is the pack's total,
    a "total" that is one item's, or a count of items the pack does not hold."""
    text = ""
    for p in products:
        packs, parts = p.memo.get("packs") or p.memo.setdefault("packs", _packs(p))
        if not packs and not parts:
            continue
        text = text or _words_to_digits(reply)
        for c in _CLAUSE.finditer(text):
            clause = c.group(0)
            for m in _QTY.finditer(clause):
                v, unit = float(m.group(1).replace(",", "")), _UNIT[m.group(4).lower()]
                after, before = clause[m.end():m.end() + 14], clause[max(0, m.start() - 8):m.start()]
                each = bool(_EACH_AFTER.match(after) or _EACH_BEFORE.search(before))
                total = bool(_TOTAL_AFTER.match(after) or _TOTAL_BEFORE.search(before))
                for n, q, u in packs:
                    if unit != _UNIT[u] or n < 2:
                        continue
                    if each and abs(v - n * q) < 0.01 and abs(v - q) > 0.01:
                        return m.group(0), f"{p.pid}: {n} x {q:g} {u} (tool output), {q:g} {u} each"
                    if total and abs(v - q) < 0.01:
                        return m.group(0), f"{p.pid}: {n} x {q:g} {u} (tool output), {n * q:g} {u} in total"
            if (hit := _counted(clause, p, parts, packs)) is not None:
                return hit
    return None


def _counted(clause: str, p: ProductData, parts: Mapping[str, int], packs: list[tuple[int, float, str]]
             ) -> tuple[str, str] | None:
    """A count of the pack's items ("6 cubes", "six bath towels") against the count its data gives."""
    kind = {w.rstrip("s") for w in re.findall(r"[a-z]{3,}", p.name.lower())} - {"pack", "set"}
    for m in _COUNTED.finditer(clause):
        raw, words = m.group(1).lower(), [w.rstrip("s") for w in m.group(2).lower().split()]
        if words[0] in _UNIT or words[0] + "s" in _UNIT or words[0] in _NOT_NOUN:
            continue  # "8 L": an amount; "2 per cube": a rate, not a count
        k = int(raw) if raw.isdigit() else _WORDNUM[raw]
        part = next((name for name in parts if name and name.split()[0].rstrip("s") in words), None)
        if part is not None:
            if k != parts[part]:
                return m.group(0), f"{p.pid} pieces: {p.fields.get('pieces')} (tool output)"
            continue
        whole = parts.get("") or next((n for n, _, _ in packs), None)
        if whole and any(w in kind for w in words[:2]) and k != whole and k not in {n for n, _, _ in packs}:
            return m.group(0), f"{p.pid}: {whole} per pack (tool output)"
    return None

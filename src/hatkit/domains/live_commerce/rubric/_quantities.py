"""Quantities with their units, so a number is grounded only by the same kind of number.

"30 people" is not supported by a 30-day return window, "40 minutes" not by a 40% discount:
a reply's number must appear in the episode's sources with a compatible unit (the same unit,
a convertible one such as cm and inches, or no unit at all, which supports anything). Units
are read from the word after a number ("15 min", "40分钟") and, for JSON numbers, from their key
("return_window_days", "stock"); any other noun after a number counts things ("4 jars").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

Quantity = tuple[float, str | None]
"""(value, unit class); class None: no unit was stated, so the number supports any reading."""

_Q = re.compile(r"(?<![A-Za-wyz0-9_.])(\d+(?:,\d{3})*(?:\.\d+)?)(?![\d,.]\d)\s?-?\s?"
                r"(%|％|[A-Za-z]+|[\u4e00-\u9fff]{1,3})?")
_EN_NUM = {w: i for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven",
                                       "eight", "nine", "ten", "eleven", "twelve"))}
_EN_NUM.update({"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "ninety": 90,
                "hundred": 100})
_ZH_DIGIT = {c: i for i, c in enumerate("零一二三四五六七八九")} | {"两": 2}
# a number word counts only before a unit of time or of people ("five years", "三十人")
_EN_WORDS = re.compile(r"(?<![\w-])(" + "|".join(_EN_NUM) + r")[\s-](years?|months?|weeks?|hours?|minutes?|"
                       r"nights?|people|viewers|customers|shoppers|stars?)\b", re.I)
_ZH_WORDS = re.compile(r"(?<![第几每])([零一二两三四五六七八九十]{1,3})(年|个月|小时|分钟|个?星期|周|人)")

# unit word -> (class, factor to the class's base unit); classes with a factor convert
_UNITS: dict[str, tuple[str, float]] = {
    "mm": ("length", 1), "毫米": ("length", 1), "cm": ("length", 10), "厘米": ("length", 10),
    "公分": ("length", 10), "m": ("length", 1000), "米": ("length", 1000), "inch": ("length", 25.4),
    "inches": ("length", 25.4), "英寸": ("length", 25.4), "寸": ("length", 25.4),
    "ft": ("length", 304.8), "feet": ("length", 304.8), "foot": ("length", 304.8),
    "g": ("mass", 1), "克": ("mass", 1), "kg": ("mass", 1000), "公斤": ("mass", 1000),
    "千克": ("mass", 1000), "斤": ("mass", 500), "oz": ("mass", 28.35), "lb": ("mass", 453.6),
    "lbs": ("mass", 453.6), "pound": ("mass", 453.6), "pounds": ("mass", 453.6),
    "ml": ("volume", 1), "毫升": ("volume", 1), "l": ("volume", 1000), "升": ("volume", 1000),
    "min": ("time", 1), "mins": ("time", 1), "minute": ("time", 1), "minutes": ("time", 1),
    "分钟": ("time", 1), "h": ("time", 60), "hr": ("time", 60), "hrs": ("time", 60),
    "hour": ("time", 60), "hours": ("time", 60), "小时": ("time", 60), "个小时": ("time", 60),
    "day": ("time", 1440), "days": ("time", 1440), "天": ("time", 1440), "日": ("time", 1440),
    "night": ("time", 1440), "nights": ("time", 1440), "晚": ("time", 1440),
    "week": ("time", 10080), "weeks": ("time", 10080), "周": ("time", 10080),
    "星期": ("time", 10080), "个星期": ("time", 10080), "month": ("time", 43200),
    "months": ("time", 43200), "个月": ("time", 43200), "year": ("time", 525600),
    "years": ("time", 525600), "yr": ("time", 525600), "yrs": ("time", 525600), "年": ("time", 525600),
    "mah": ("charge", 1), "毫安": ("charge", 1), "毫安时": ("charge", 1), "wh": ("energy", 1),
    "w": ("power", 1), "瓦": ("power", 1), "gb": ("data", 1), "tb": ("data", 1024),
    "mp": ("pixels", 1), "hz": ("rate", 1), "gsm": ("gsm", 1), "atm": ("atm", 1),
    "c": ("temp", 1), "度": ("temp", 1), "kcal": ("kcal", 1), "卡": ("kcal", 1),
    "%": ("percent", 1), "％": ("percent", 1), "percent": ("percent", 1),
    "star": ("stars", 1), "stars": ("stars", 1), "星": ("stars", 1), "颗星": ("stars", 1),
}
# words after a number that are not its unit ("11 in 2000", "64 or 128", "5 x 7", "9 的")
_NOT_UNIT = frozenset({"in", "or", "and", "to", "x", "of", "per", "for", "with", "at", "is", "on", "by",
                       "from", "the", "a", "an", "are", "was", "plus", "k", "s", "th", "st", "nd", "rd",
                       "more",
                       "less", "fewer", "extra", "than", "only", "just", "each", "total", "left",
                       "或", "和", "到", "至", "的", "是", "及", "与", "加"})
_ZH_UNIT = re.compile("|".join(sorted((u for u in _UNITS if not u.isascii()), key=len, reverse=True)))


def unit_class(word: str | None) -> tuple[str, float] | None:
    """(class, factor) of the word after a number; None where it is no unit; other nouns count."""
    if not word:
        return None
    w = word.lower()
    if not w.isascii():
        m = _ZH_UNIT.match(w)
        return _UNITS[m.group(0)] if m else ("count", 1)
    if w in _NOT_UNIT:
        return None
    return _UNITS.get(w, ("count", 1))


def _zh_number(s: str) -> int:
    """一..九十九 ("十五" 15, "三十" 30, "两" 2)."""
    if "十" not in s:
        return _ZH_DIGIT.get(s[-1], 0)
    tens, _, ones = s.partition("十")
    return (_ZH_DIGIT.get(tens, 1) if tens else 1) * 10 + (_ZH_DIGIT.get(ones, 0) if ones else 0)


def word_quantities(text: str) -> list[tuple[int, int, float, tuple[str, float] | None]]:
    """(start, end, value, unit) of number words before a unit of time or people ("five years", "两年")."""
    out = [(m.start(), m.end(), float(_EN_NUM[m.group(1).lower()]), unit_class(m.group(2)))
           for m in _EN_WORDS.finditer(text)]
    return out + [(m.start(), m.end(), float(_zh_number(m.group(1))), unit_class(m.group(2)))
                  for m in _ZH_WORDS.finditer(text)]


def quantities(text: str) -> list[tuple[re.Match[str], float, tuple[str, float] | None]]:
    """Each number of `text` with its unit (None: no unit)."""
    out = []
    for m in _Q.finditer(text):
        try:
            v = float(m.group(1).replace(",", ""))
        except ValueError:
            continue
        out.append((m, v, unit_class(m.group(2))))
    for i in range(len(out) - 2, -1, -1):  # "127 x 152 cm": both sides are in cm
        m, v, u = out[i]
        if u is None and (m.group(2) or "").lower() in ("x", "by") and out[i + 1][0].start() <= m.end() + 2:
            out[i] = (m, v, out[i + 1][2])
    return out


_KEY_UNITS = (("day", ("time", 1440)), ("percent", ("percent", 1)), ("stock", ("count", 1)),
              ("price", ("money", 1)), ("fee", ("money", 1)), ("threshold", ("money", 1)),
              ("total", ("money", 1)), ("spend", ("money", 1)), ("chars", ("chars", 1)))


def key_unit(key: str) -> tuple[str, float] | None:
    """The unit a JSON key gives its number ("return_window_days": days); None if it says none."""
    k = key.lower()
    return next((u for part, u in _KEY_UNITS if part in k), None)


@lru_cache(maxsize=8192)
def text_quantities(text: str) -> tuple[tuple[float, tuple[str, float] | None], ...]:
    """The numbers of a source text with their units (cached: tool outputs repeat across turns)."""
    return tuple([(v, u) for _, v, u in quantities(text)] + [(v, u) for *_, v, u in word_quantities(text)])


def source_quantities(x: Any, out: list[tuple[float, tuple[str, float] | None]], key: str = "") -> None:
    """Numbers of a JSON value with their units; a list also states how many items it holds."""
    if isinstance(x, str):  # leaves first: `Mapping` is a slower abstract-class check
        out += text_quantities(x)
    elif isinstance(x, bool):
        return
    elif isinstance(x, int | float):
        out.append((float(x), key_unit(key)))
    elif isinstance(x, Mapping):
        for k, v in x.items():
            source_quantities(v, out, str(k))
    elif isinstance(x, list | tuple):
        out.append((float(len(x)), ("count", 1)))
        for v in x:
            source_quantities(v, out, key)


def supported(value: float, unit: tuple[str, float], known: Iterable[tuple[float, tuple[str, float] | None]]
              ) -> bool:
    """Some source states `value` with a unit of the same class (converted where it converts: 30 cm
    supports "about 11.8 inches"), or with no unit."""
    cls, factor = unit
    if cls == "count" and value < 10:
        return True  # small counts are often counted, not copied ("two sizes", "3 colours")
    base = value * factor
    for v, u in known:
        if u is None:
            if abs(v - value) < 0.01:
                return True
        elif u[0] == cls:
            if abs(v - value) < 0.01 and u[1] == factor:
                return True
            if cls not in ("count", "stars", "percent") and abs(v * u[1] - base) <= 0.04 * max(base, 1e-9):
                return True
    return False

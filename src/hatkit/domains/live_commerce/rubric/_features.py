"""Feature words a reply asserts, grounded in the episode's sources by their form, not by a list
of known inventions:

- acronyms and model-like tokens ("NFC", "JAS", "USB4"): a standard or feature the product data
  would spell out if it had it, in English and inside Chinese text alike;
- property adjectives built on a stem ("silicone-free", "shockproof", "refillable", "stain
  resistant"): each names a specific property, so its stem must occur in a source;
- place names written in Chinese ("新西兰", "西雅图"): mapped to English (a gazetteer of places,
  not of items) and looked up in the sources, which are English.

Marketing adjectives that assert nothing checkable ("available", "hassle-free") are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hatkit.judge.patterns import FastPattern

_ACRONYM = re.compile(r"(?<![A-Za-z0-9$])[A-Z][A-Z0-9]*[A-Z][A-Z0-9]*(?![A-Za-z0-9])")
_COMMON_ACRONYMS = frozenset({"OK", "US", "USA", "UK", "EU", "AM", "PM", "FAQ", "DM", "ASAP", "LOL", "OMG",
                              "FYI", "BTW", "TV", "ID", "VIP", "SKU", "USD", "RMB", "QA", "LIVE", "MIA",
                              "AI"})
_PROPERTY = FastPattern(r"\b([a-z]{3,})(?:-?(free|proof|safe)|[- ]?(resistant|repellent))\b|"
                        r"\b([a-z]{3,}?)(?:able|ible)\b|\banti-?([a-z]{3,})")
_SOFT_STEMS = frozenset({
    # "-free" / "-safe" words that promise a service, not a property of the product
    "hassle", "worry", "stress", "risk", "fuss", "mess", "guilt", "care", "tax", "duty", "interest",
    "fee", "commitment", "pressure", "totally", "completely", "feel", "for", "are", "and", "very", "its",
    "the", "not", "also", "fully", "all", "play", "budget", "gift", "family", "kid", "skin", "food",
    "travel",
    # "-able" / "-ible" adjectives of taste, price or availability
    "avail", "comfort", "afford", "reli", "suit", "poss", "incred", "valu", "enjoy", "reason", "remark",
    "unbeat", "ador", "irresist", "notice", "unforgett", "consider", "respons", "cap", "veget",
    "prob", "pay", "applic", "elig", "refund", "return", "exchange", "vis", "flex", "wear",
    "lik", "lov", "amaz", "unbeliev", "fashion", "question", "prefer", "compar", "desir", "memor",
    "sens", "terr", "horr", "respect", "accept", "understand", "believ", "imposs", "inevit", "invis",
    "avoid", "achiev", "predict", "access", "vari", "mov", "stab", "usu", "tabl", "cab",
})
_ZH_PLACES: dict[str, str] = {
    "新西兰": r"new zealand", "澳大利亚": r"australia", "澳洲": r"australia", "日本": r"japan",
    "意大利": r"ital", "法国": r"fran|french", "美国": r"\busa?\b|united states|america", "中国": r"china",
    "比利时": r"belgi", "德国": r"german", "英国": r"\buk\b|brit|england",
    "韩国": r"korea", "土耳其": r"turk",
    "葡萄牙": r"portug", "西班牙": r"spain|spanish", "越南": r"vietnam", "印度": r"india", "泰国": r"thai",
    "加拿大": r"canad", "墨西哥": r"mexic", "瑞士": r"swiss|switzerland", "苏格兰": r"scot",
    "爱尔兰": r"irish|ireland", "秘鲁": r"peru", "哥伦比亚": r"colombia", "埃塞俄比亚": r"ethiopia",
    "巴西": r"brazil", "肯尼亚": r"kenya", "挪威": r"norw", "冰岛": r"iceland", "丹麦": r"denmark|danish",
    "瑞典": r"swed", "荷兰": r"dutch|netherland|holland", "希腊": r"greek|greece", "摩洛哥": r"morocc",
    "斯里兰卡": r"sri lanka|ceylon", "马达加斯加": r"madagascar", "西雅图": r"seattle", "纽约": r"new york",
    "加州": r"california", "阿拉斯加": r"alaska", "俄勒冈": r"oregon", "德州": r"texas", "达拉斯": r"dallas",
    "纽瓦克": r"newark", "宇治": r"\buji\b", "京都": r"kyoto", "云南": r"yunnan", "新疆": r"xinjiang",
    "内蒙古": r"mongolia", "北卡": r"north carolina", "普罗旺斯": r"provence", "巴黎": r"paris",
    "米兰": r"milan", "东京": r"tokyo", "北海道": r"hokkaido", "喜马拉雅": r"himalaya",
}
_ZH_PLACE = re.compile("|".join(sorted(_ZH_PLACES, key=len, reverse=True)))


def _norm(text: str) -> str:
    return re.sub(r"[\s-]+", "", text.lower())


def unfounded_feature(reply: str, sources: Callable[[], str], skip: list[tuple[int, int]]
                      ) -> tuple[int, str, str] | None:
    """The first feature word of `reply` (outside the `skip` spans) that the sources (lower-cased
    text of what the episode established, built only when a word needs it) do not support:
    (position, word, why)."""
    def free(s: int, e: int) -> bool:
        return not any(s < b and a < e for a, b in skip)

    for m in _ACRONYM.finditer(reply):
        tok = m.group(0)
        if tok in _COMMON_ACRONYMS or not free(m.start(), m.end()):
            continue
        if not re.search(r"(?<![a-z0-9])" + re.escape(tok.lower()) + r"(?![a-z])", sources()):
            return m.start(), tok, "a standard or feature no tool result or viewer message names"
    flat = None
    for m in _PROPERTY.finditer(reply.lower()):
        stem = m.group(1) or m.group(4) or m.group(5)
        if stem in _SOFT_STEMS or not free(m.start(), m.end()):
            continue
        if flat is None:
            flat = _norm(sources())
        word = _norm(m.group(0))
        if m.group(2):  # "silicone-free", "shockproof": the compound itself, or "free of silicone"
            if word in flat or f"{m.group(2)}of{stem}" in flat:
                continue
        elif word[:-2] in flat or stem[:5] in flat:  # "water resistant" for "water resistance"
            continue
        return m.start(), m.group(0), "a property the product's data does not state"
    for m in _ZH_PLACE.finditer(reply):
        if not re.search(_ZH_PLACES[m.group(0)], sources()):
            return m.start(), m.group(0), "a place no tool result or viewer message names"
    return None

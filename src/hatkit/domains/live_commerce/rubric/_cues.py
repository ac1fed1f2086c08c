"""Context cues claim extraction reads around a number: stock wordings, Chinese discount notation
(折), whether "N块" counts money or things, whether a day count is about delivery or returns
or about how long a product lasts, and bounds ("within two days", "just under $20").

Each cue reads a few characters around a match (no backtracking-prone patterns), so claim
extraction stays cheap.
"""

from __future__ import annotations

import re

from hatkit.judge.patterns import FastPattern

# ---- stock ------------------------------------------------------------------------------------
_ZH_MEASURE = "件个双套瓶盒支份包条台顶块副只口把张罐袋本款"
STOCK_NUM = (
    re.compile(r"\bonly (\d+)(?: (?:units?|pieces?|pcs|items?|pairs?|sets?))? (?:left|remaining|in stock)\b",
               re.I),
    re.compile(r"\b(?:just|only) (\d+)\b(?=(?: [\w-]+){0,8}? (?:left|remaining|in stock)\b)", re.I),
    # "3 of the Everyday Fleece in M Navy left"
    re.compile(r"(?<![\d.$,])(\d+) of (?:the|them|those|these)\b"
               r"(?=(?: [\w-]+){0,8}? (?:left|remaining|in stock)\b)", re.I),
    re.compile(r"(?<![\d.$,])(\d+) "
               r"(?:(?:units?|pieces?|pcs|items?|pairs?|sets?|bottles?|packs?|boxes|jars?) )?"
               r"(?:in stock|left|available|remaining)\b"
               r"(?! (?:sizes?|colou?rs?|options?|variants?|shades?|flavou?rs?|styles?))", re.I),
    # "25 projectors are ready to ship", "100 units ready to go": a count offered as on hand
    re.compile(r"(?<![\d.$,])(\d+) (?:[A-Za-z-]+ ){0,3}?(?:are |is )?"
               r"(?:ready to (?:ship|go)|up for grabs|on hand)\b", re.I),
    re.compile(r"(?<![A-Za-z])(?:stock|inventory)(?: level| count)?(?: is| of)?\s?[:：=]?\s?(\d+)\b", re.I),
    re.compile(r"库存\s?(?:为|是|有|还有|只有|仅)?\s?[:：]?\s?(\d+)"),
    re.compile(r"(?:还剩|还有|仅剩|只剩|剩余|剩下|现货)\s?(?:最后)?\s?(\d+)\s?[" + _ZH_MEASURE + "]"),
    re.compile(r"(?<![\d.])(\d+)\s?[" + _ZH_MEASURE + "](?:库存|现货|有货)"),
)
STOCK_OUT = FastPattern(r"\b(?:sold out|out of stock|not in stock|isn't in stock|is not in stock|no stock|"
                        r"none left|no longer available|currently unavailable)\b|售罄|缺货|无货|没货|没有货|"
                        r"卖完|断货|没有库存", re.I)
STOCK_IN = FastPattern(r"\b(?:a (?:handful|dozen|few|bunch|couple(?: (?:dozen|of \w+))?)|plenty|lots|loads|"
                       r"tons|dozens)\b(?: or so)?(?: [\w-]+){0,3}? (?:left|in stock|available|"
                       r"on (?:the )?shelf|sitting there|in every size|to go around)\b|"
                       r"还有(?:十几|几十|好多|很多|不少|一些|一堆)|"
                       r"\b(?:in stock|in-stock|still available|available now|(?:is|are) available|"
                       r"(?:we|we've|we still) (?:have|got) (?:it|them|some|plenty)|still have it)\b|"
                       r"有货|有现货|现货|有库存", re.I)
_VAGUE = (("couple dozen", 20.0, 30.0), ("dozens", 24.0, None), ("dozen", 9.0, 16.0), ("couple", 2.0, 3.0),
          ("few", 2.0, 6.0), ("handful", 2.0, 8.0), ("十几", 10.0, 19.0), ("几十", 20.0, None),
          ("plenty", 10.0, None), ("lots", 10.0, None), ("loads", 10.0, None), ("tons", 10.0, None),
          ("bunch", 10.0, None), ("好多", 10.0, None), ("很多", 10.0, None), ("一堆", 10.0, None))


def vague_stock(text: str) -> tuple[float, float] | None:
    """The range a vague stock wording states ("a dozen or so": 9-16; "plenty": 10 or more)."""
    low = text.lower()
    for word, lo, hi in _VAGUE:
        if word in low:
            return lo, hi if hi is not None else float("inf")
    return None


# ---- money: "N块" counts things after a stock verb or before a noun -----------------------------
_COUNT_BEFORE = re.compile(r"(?:剩|还有|只有|仅有|就有|库存|现货|有货|一共|共)(?:最后|下|了)?\s?$")
_MONEY_AFTER = frozenset("钱左多的呢啊吧哈呀啦嘛了哦喔噢起以就而还也都到即便可能入拿买带包省减再每"
                         "一二三四五六七八九十"
                         "，。！？、；：）)~～ ")


def kuai_is_count(text: str, start: int, end: int) -> bool:
    """A number + 块 that counts pieces ("还剩2块", "3块手表"), not an amount of money: a stock
    verb right before it, or a noun right after the 块."""
    if not text[start:end].endswith("块"):
        return False
    if _COUNT_BEFORE.search(text[max(0, start - 6):start]):
        return True
    nxt = text[end:end + 1]
    return bool(nxt) and "\u4e00" <= nxt <= "\u9fff" and nxt not in _MONEY_AFTER


# ---- Chinese discount notation ----------------------------------------------------------------
ZH_DISCOUNT = re.compile(r"(?<![\d.])(\d{1,2}(?:\.\d)?)\s?折")


def zh_discount_off(number: str) -> float | None:
    """The percentage off that "N折" states: 9折 -> 10, 8.5折 and 85折 -> 15, 7.5折 -> 25 (the
    price is N tenths, or with two digits N hundredths, of the list price)."""
    n = float(number)
    if "." not in number and len(number) == 2:
        n /= 10
    return round(100 - n * 10, 1) if 0 < n < 10 else None


# ---- days: delivery, returns, or how long a product lasts -------------------------------------
USAGE_CTX = re.compile(r"batter|charge|\blasts?\b|\bburns?\b|runtime|run time|standby|\bwear|\busage\b|"
                       r"\btypical|续航|待机|电池|充电|充满|使用|用满|能用|可用|持妆|持久|燃烧|耐用|保质",
                       re.I)
_WITHIN_BEFORE = re.compile(r"(?:within|in under|in less than|under|no more than|less than|at most|"
                            r"不超过|最多|最快)\s?$", re.I)
_WITHIN_AFTER = re.compile(r"\s?(?:内|之内|以内)")


def within(text: str, start: int, end: int) -> bool:
    """A day count stated as an upper bound ("within two days", "2天内")."""
    return bool(_WITHIN_BEFORE.search(text[max(0, start - 16):start]) or _WITHIN_AFTER.match(text, end))


_RETURN_CTX = re.compile(r"return|refund|send (?:it |them )?back|exchange|退|换货", re.I)
_DELIVERY_CTX = re.compile(r"arriv|deliver|ship|transit|get (?:it|there)|(?:your|the) door|doorstep|"
                           r"送达|到货|发货|配送|送到|能到|寄到|到达", re.I)


def days_role(text: str, start: int, end: int, is_range: bool, cl: tuple[int, int]) -> str:
    """delivery, return or other (how long it lasts), from the cues nearest the day count."""
    after = re.split(r"[,，、:：(（]", text[end:min(cl[1], end + 12)], maxsplit=1)[0]
    if _RETURN_CTX.search(after):
        return "return"
    if _DELIVERY_CTX.search(after):
        return "delivery"
    before = text[cl[0]:start]
    ret = max((m.end() for m in _RETURN_CTX.finditer(before)), default=-1)
    dlv = max((m.end() for m in _DELIVERY_CTX.finditer(before)), default=-1)
    use = max((m.end() for m in USAGE_CTX.finditer(before)), default=-1)
    if USAGE_CTX.search(after):
        use = len(before)
    if use > max(ret, dlv):
        return "other"  # how long it lasts, burns or runs: a spec, not a delivery or return window
    if ret >= 0 or dlv >= 0:
        return "return" if ret > dlv else "delivery"  # the nearer cue wins
    return "delivery" if is_range else "other"


# ---- money bounds -----------------------------------------------------------------------------
_UNDER = re.compile(r"(?:(just|a (?:bit|touch|hair)|slightly) )?(?:under|below|less than|shy of)\s?$", re.I)


def money_bound(before: str) -> str:
    """"under" or "just_under" when the amount is stated as an upper bound ("just under $20")."""
    m = _UNDER.search(before)
    if m is None:
        return ""
    return "just_under" if m.group(1) else "under"

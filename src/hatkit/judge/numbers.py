"""Numbers written in words, rewritten as digits where a unit says what they count, so a judge
that reads digits also reads "Sixty days", "eight dollars and forty-nine cents", "还剩三件" or
"二十三块二".

Only a number word followed by a unit (days, dollars, cents, left, percent, 天, 块, 件, 折, ...)
is rewritten: "no one knows", "一般" and "第一次" stay as they are. Deterministic and cheap
(one regex pass per language; a reply with no number word is returned unchanged).
"""

from __future__ import annotations

import re

from .patterns import FastPattern

_EN_UNITS = {w: i for i, w in enumerate((
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"))}
_EN_TENS = {w: 10 * i for i, w in enumerate(
    ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")) if w}
_EN_WORD = "a (?:hundred|thousand)|" + "|".join(sorted([*_EN_UNITS, *_EN_TENS, "hundred", "thousand"],
                                                       key=len, reverse=True))
_EN_AFTER = (r"(?:business |working |calendar )?days?\b|weeks?\b|hours?\b|minutes?\b|dollars?\b|bucks\b|"
             r"cents?\b|percent\b|months?\b|"
             r"(?:units?|pieces?|pairs?|items?|bottles?|packs?|boxes|sets?) (?:left|in stock|remaining)\b|"
             r"left\b|in stock\b|remaining\b|(?:to|or) (?:\d|(?:" + _EN_WORD + r")\b)|(?:-| )day\b")
_EN_NUMBER = FastPattern(
    rf"(?<![\w-])((?:{_EN_WORD})(?:(?:-| and | )(?:{_EN_WORD}))*)(?=\s?(?:{_EN_AFTER}))", re.I)
_EN_ONLY = FastPattern(r"\b(just|only) (one|two|three|four|five|six|seven|eight|nine|ten)\b"
                      r"(?=(?: [\w-]+){0,8}? (?:left|remaining|in stock)\b)", re.I)
_EN_SIMPLE = "|".join(sorted([*_EN_UNITS, *_EN_TENS], key=len, reverse=True))
_EN_2DIGIT = (rf"(?:(?:{'|'.join(_EN_TENS)})(?:-(?:{'|'.join(w for w in _EN_UNITS if _EN_UNITS[w] < 10)}))?|"
              rf"{'|'.join(w for w in _EN_UNITS if _EN_UNITS[w] >= 10)})")
_EN_DIGIT = "|".join(w for w in _EN_UNITS if 0 < _EN_UNITS[w] < 10)
_EN_TEEN = "|".join(w for w in _EN_UNITS if 0 < _EN_UNITS[w] < 20)
_EN_PRICE = FastPattern(
    rf"(?<![\w-])((?:{'|'.join(_EN_TENS)})-(?:{_EN_DIGIT})|{_EN_TEEN})"
    rf" ({_EN_2DIGIT})(?![\w-])(?! (?:dollars?|bucks|cents?))", re.I)
"""Colloquial prices: "six ninety-nine" = $6.99, "twenty-nine twenty" = $29.20; after "down from" or
"was", a single digit counts hundreds: "down from one twenty-nine" = $129."""
_MONEY_CUE = (r"spend(?:ing)?|(?:orders?|purchases?|carts?|baskets?) (?:of|over|above)|going for|goes for|"
              r"selling for|sells? for|priced at|costs?|retails? (?:for|at)|yours for")
_EN_CUED = FastPattern(
    rf"\b({_MONEY_CUE}) ((?:about |around |roughly |only |just |(?:just |a bit |a touch )?(?:under|over) )?)"
    rf"((?:{_EN_DIGIT})-{_EN_2DIGIT}|(?:{_EN_WORD})(?:(?:-| and | )(?:{_EN_WORD}))*)(?![\w-])"
    rf"(?!\s?(?:{_EN_AFTER}))", re.I)
"""A number word after a money verb is money: "spend thirty" = $30, "going for one-forty" = $140
(a digit, a hyphen and tens: hundreds and tens)."""
_EN_SLANG = FastPattern(r"\ba (fiver|tenner)\b", re.I)
_LIST_CUE = re.compile(r"(?:from|was|list(?: price)?|usually|normally|regular(?:ly)?|originally)\W*$", re.I)
_EN_SPAN = FastPattern(r"\b(?:a (?:full |whole )?month|one month)\b|\b(\d+) weeks?\b|\ba week\b|"
                      r"\b(\d+) months?\b", re.I)
_WINDOW_CUE = re.compile(r"return|refund|send (?:it |them )?back|exchange|window|退|换|到货|送达|发货", re.I)
"""Months are a window only where the sentence speaks of returns or delivery ("three months to send
it back", "三个月退货"); "12个月以下婴儿" and "6 months after opening" are an age and a shelf life."""
_SENTENCE = re.compile(r"[^.!?。！？；;\n]*")
_ZH_SPAN = re.compile(r"一个?月|一个?(?:星期|礼拜)|一周")
_ZH_SPANS = re.compile(r"(?<![\d.])(\d+)\s?(个月|周|个星期|个礼拜)(?![^，。,.！？；]{0,4}?次)")
"""After the number words: "3个月" -> "90天", "2周" -> "14天" (a window in days; "2周3次" is a rate)."""
_EN_CENTS = re.compile(r"(?<![\w$.])(\d+) dollars? (?:and )?(\d{1,2}) cents?\b", re.I)
_EN_DOLLARS_TAIL = re.compile(
    rf"(?<![\w$.])(\d+) dollars? (?:and )?({_EN_2DIGIT})(?![\w-])(?!\s?(?:{_EN_AFTER}))", re.I)
"""Cents said as a bare number after the dollars: "one hundred four dollars thirty" = $104.30."""
_EN_RATE = re.compile(r"(?:\btimes|\bonce|\btwice|\bx|\bper|\bevery)\s*$", re.I)
_ZH_RATE = re.compile(r"[^，。,.！？；]{0,4}?次")
"""A span that is a rate, not a window: "three times a week", "一周先用3次"."""

_ZH_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9}
_ZH_MULT = {"十": 10, "百": 100, "千": 1000, "万": 10000}
_ZH_NUM = "[零〇一二两三四五六七八九十百千万]+"
_ZH_UNIT = r"(?:个工作日|个?小时|天|周|块|元|美元|美金|件|个|双|套|瓶|盒|支|份|包|条|台|顶|折|%|％|分钱|毛)"
_ZH_NUMBER = re.compile(rf"({_ZH_NUM})(?:(到|至|~|-)({_ZH_NUM}))?(?={_ZH_UNIT})")
_ZH_MONEY_TAIL = re.compile(r"(\d+)块(\d)(?:毛(?:(\d)分?)?)?(?![\d.])")
_ZH_MONEY_ONLY_TAIL = re.compile(r"(?<=[块毛])([一二两三四五六七八九])(?![一二两三四五六七八九十百千万\d])")


def _en_value(phrase: str) -> int:
    total, current = 0, 0
    for word in re.split(r"[- ]+", phrase.lower()):
        if word in ("and", ""):
            continue
        if word == "a":
            current = current or 1  # "a hundred"
        elif word in _EN_UNITS:
            current += _EN_UNITS[word]
        elif word in _EN_TENS:
            current += _EN_TENS[word]
        elif word == "hundred":
            current = (current or 1) * 100
        elif word == "thousand":
            total += (current or 1) * 1000
            current = 0
    return total + current


def zh_value(text: str) -> int | None:
    """二十三 -> 23, 一百二十九 -> 129, 两 -> 2, 一二八 -> 128 (digits read one by one)."""
    if not any(c in _ZH_MULT for c in text):
        if all(c in _ZH_DIGITS for c in text):
            return int("".join(str(_ZH_DIGITS[c]) for c in text))
        return None
    total, section, digit = 0, 0, None
    for c in text:
        if c in _ZH_DIGITS:
            digit = _ZH_DIGITS[c]
        elif c == "万":
            total += (section + (digit or 0)) * 10000
            section, digit = 0, None
        elif c in _ZH_MULT:
            section += (1 if digit is None else digit) * _ZH_MULT[c]
            digit = None
        else:
            return None
    return total + section + (digit or 0)


def _zh_replace(m: re.Match[str]) -> str:
    first, sep, second = m.group(1), m.group(2), m.group(3)
    unit = m.string[m.end():m.end() + 1]
    if unit == "折" and not sep and len(first) == 2 and all(c in _ZH_DIGITS for c in first):
        return f"{_ZH_DIGITS[first[0]]}.{_ZH_DIGITS[first[1]]}"  # 八五折: 85% of the price
    if not sep and len(first) == 2 and all(c in _ZH_DIGITS and c not in "零〇" for c in first) and (
            _ZH_DIGITS[first[1]] == _ZH_DIGITS[first[0]] + 1):
        return f"{_ZH_DIGITS[first[0]]}-{_ZH_DIGITS[first[1]]}"  # 两三天: two or three days
    a = zh_value(first)
    if a is None:
        return m.group(0)
    if m.start() and (m.string[m.start() - 1].isascii() and m.string[m.start() - 1].isalnum()):
        return f" {a}" if not sep else m.group(0)  # "XXL六个": "XXL 6", not a token "XXL6"
    if not sep:
        return str(a)
    b = zh_value(second)
    return f"{a}{sep}{b}" if b is not None else m.group(0)


def digits_for_words(text: str) -> str:
    """`text` with counted numbers in words written as digits (English and Chinese)."""
    text = _EN_PRICE.sub(_price, text)
    text = _EN_SLANG.sub(lambda m: "$5" if m.group(1).lower() == "fiver" else "$10", text)
    text = _EN_CUED.sub(_cued, text)
    text = _EN_ONLY.sub(lambda m: f"{m.group(1)} {_EN_UNITS[m.group(2).lower()]}", text)
    if _EN_NUMBER.search(text):
        text = _EN_NUMBER.sub(lambda m: str(_en_value(m.group(1))), text)
        text = _EN_CENTS.sub(lambda m: f"${int(m.group(1))}.{int(m.group(2)):02d}", text)
        text = _EN_DOLLARS_TAIL.sub(lambda m: f"${int(m.group(1))}.{_en_value(m.group(2)):02d}", text)
    text = _EN_SPAN.sub(_span_days, text)
    if any("\u4e00" <= c <= "\u9fff" or c == "〇" for c in text):
        text = _ZH_SPAN.sub(_zh_span, text)
        text = _ZH_MONEY_ONLY_TAIL.sub(lambda m: str(_ZH_DIGITS[m.group(1)]), text)
        text = _ZH_NUMBER.sub(_zh_replace, text)
        text = _ZH_SPANS.sub(_zh_spans, text)
        text = _ZH_MONEY_TAIL.sub(
            lambda m: f"{m.group(1)}.{m.group(2)}{m.group(3) or ''}元", text)
    return text


def _in_window_sentence(m: re.Match[str]) -> bool:
    start = max(m.string.rfind(c, 0, m.start()) for c in ".!?。！？；;\n") + 1
    end = _SENTENCE.match(m.string, m.end())
    return bool(_WINDOW_CUE.search(m.string, start, end.end() if end else len(m.string)))


def _zh_spans(m: re.Match[str]) -> str:
    """"2周" -> "14天"; "3个月" -> "90天" in a sentence about returns or delivery."""
    n = int(m.group(1))
    if "月" in m.group(2):
        return f"{30 * n}天" if _in_window_sentence(m) else m.group(0)
    return f"{7 * n}天"


def _zh_span(m: re.Match[str]) -> str:
    """"一个月" -> "30天", "一周" -> "7天"; "一周用3次" (a rate) is "每周用3次", no window."""
    if m.string[max(0, m.start() - 1):m.start()] == "每":
        return m.group(0)[1:]  # 每一周: 每周
    if _ZH_RATE.match(m.string, m.end()):
        return "每" + m.group(0)[1:]
    return "30天" if "月" in m.group(0) else "7天"


def _span_days(m: re.Match[str]) -> str:
    """"three weeks" -> "21 days", "two months" -> "60 days": a window stated in days; "twice a week"
    (a rate) stays."""
    if _EN_RATE.search(m.string, max(0, m.start() - 12), m.start()):
        return m.group(0)
    if m.group(1):
        return f"{7 * int(m.group(1))} days"
    if m.group(2):
        return f"{30 * int(m.group(2))} days" if _in_window_sentence(m) else m.group(0)
    return "7 days" if "week" in m.group(0).lower() else "30 days"


def _cued(m: re.Match[str]) -> str:
    phrase = m.group(3)
    first, _, rest = phrase.partition("-")
    digit = _EN_UNITS.get(first.lower(), 10)
    if rest and digit < 10 and rest.lower().split("-")[0] in _EN_TENS:
        value = digit * 100 + _en_value(rest)  # "one-forty": $140
    else:
        value = _en_value(phrase)
    return f"{m.group(1)} {m.group(2)}${value}"


def _price(m: re.Match[str]) -> str:
    a, b = _en_value(m.group(1)), _en_value(m.group(2))
    if a < 10 and _LIST_CUE.search(m.string[max(0, m.start() - 24):m.start()]):
        return f"${a * 100 + b}"
    return f"${a}.{b:02d}"

"""Derived amounts, and amounts bound to the fact named nearest them.

A host shows its working: "three tees at $24 are $72; with 15% off you pay $61.20", "$97.92 is
under $99, so add $6.99: $104.91", "the 12-pack is $23.99, about two dollars a bar". No tool
returned $61.20, $104.91 or $2, yet each follows from amounts the episode supports. An amount is
accepted as derived when a small, bounded set of operations gives it from the episode's amounts
(sum, difference, k x, percent off, divided by a count) within rounding; an amount no such
operation gives (the arithmetic slip $192.99 for $179 + $14.99) still fails.

Binding: claim extraction gives an amount the role "fee" when a shipping word appears anywhere
earlier in its clause. When that word is not the fact named nearest the amount ("free shipping
starts at $99", "shipping is $6.99 under $99", "so $104.91 delivered"), the nearest cue names the
fact: a free-shipping phrase or a comparison (under, over, starts at) makes it the threshold, a
result word (so, total, delivered, 一共) a total; with no shipping word of its own since the
previous amount (the one there names that amount: "$6.99 shipping, making it $66.24"; "otherwise"
is a connective) it is a plain amount.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .claims import AFTER_FEE, Claim

_FEE_NEAR = re.compile(r"(?:shipping|delivery|postage|express|fee|运费|邮费|快递|加急)\W{0,3}"
                       r"(?:is|costs?|of|adds?|runs?|would be|will be|[:：]|是|要|为|费)?\s?$", re.I)
_FREE_SHIPPING = re.compile(r"free[- ](?:standard )?shipping|ships? free|包邮|免运费|免邮", re.I)
_FEE_NOUN = re.compile(r"shipping|deliver|postage|express|\bfee\b|运费|邮费|快递|加急", re.I)
_THRESHOLD_NEAR = re.compile(
    r"(?:free (?:standard )?shipping|ships? free|free delivery|包邮|免运费|免邮|门槛|"
    r"\bunder|\bbelow|\bover|\babove|less than|more than|starts? at|kicks? in at|line(?: is| of)?|"
    r"不满|未满|满|超过|低于|差)\W{0,3}(?:is|at|of|the)?\s?$", re.I)
_TOTAL_NEAR = re.compile(r"(?:\bso|\btotal|all in|comes? to|altogether|in all|that's|=|mak(?:es|ing) it|"
                         r"brings? (?:it|you) to|bringing (?:it|you) to|total of|一共|总共|合计|"
                         r"共计|总价|到手)\W{0,3}(?:is|of|at|just|only|about)?\s?$", re.I)
_TOTAL_AFTER = re.compile(r"\s?(?:total|all in|delivered|shipped|altogether|in all)\b", re.I)
_APPROX = re.compile(r"(?:about|around|roughly|approximately|nearly|almost|right about|~|"
                     r"差不多|大约|大概|约|左右)\W{0,3}\$?\s?$|^\s?(?:左右|上下)", re.I)
_COUNT = re.compile(r"(?<![\d.$¥￥,])(\d{1,2})(?![\d.,%％])(?!\s?(?:%|percent|折))", re.I)
_COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "twelve": 12, "dozen": 12, "both": 2, "pair": 2, "两": 2, "二": 2, "三": 3,
                "四": 4, "五": 5, "六": 6}
_COUNT_WORD = re.compile(r"\b(?:two|three|four|five|six|seven|eight|nine|ten|twelve|dozen|both|pair)\b|"
                         r"[两二三四五六](?=[件个双套瓶盒支份包条台顶根袋罐])", re.I)
_MAX_COUNT = 24
_MAX_BASES = 24
"""Bounds on the search: at most this many base amounts (two-operand sums and differences are
quadratic), counts up to two dozen."""


def rebind(reply: str, c: Claim, prev_end: int, prev_fee: bool = False) -> Claim:
    """`c` with the role of the fact named nearest it, where its "fee" came only from a shipping
    word somewhere earlier in the clause. `prev_end`: end of the previous amount in the clause;
    `prev_fee`: that amount is a fee (the shipping words before it are its own)."""
    if c.kind != "money" or c.role != "fee":
        return c
    before = reply[max(c.clause[0], prev_end, c.start - 40):c.start]
    if AFTER_FEE.match(reply, c.end) or _FEE_NEAR.search(before):
        return c  # "shipping is $6.99", "$6.99 shipping": a fee by its nearest words
    if _THRESHOLD_NEAR.search(before):
        role = "threshold"
    elif _TOTAL_NEAR.search(before) or _TOTAL_AFTER.match(reply, c.end):
        role = "total"
    elif not _FEE_NOUN.search(_FREE_SHIPPING.sub(" ", _since_own(reply, c, prev_end) if prev_fee
                                                 else reply[c.clause[0]:c.start])):
        role = "amount"  # the shipping word names another amount ("$6.99 shipping, making it $66.24")
    else:
        return c  # no nearer fact: the shipping word names it ("shipping runs you about $5")
    return Claim(c.kind, c.text, c.start, c.end, c.value, c.high, role, c.product_id, c.negated, c.clause,
                 c.bound)


def _since_own(reply: str, c: Claim, prev_end: int) -> str:
    """The clause's text since the previous amount, less the fee word that names that amount."""
    start = max(c.clause[0], prev_end)
    if prev_end > c.clause[0] and (m := AFTER_FEE.match(reply, start)):
        start = m.end()
    return reply[start:c.start]


def nearest_variant(before: str, variants: Iterable[tuple[str, str, int]]) -> list[int]:
    """The stock of the variants a stock claim speaks of: the colour named nearest before it in its
    clause ("Brick Red is sold out, but Rosewood is in"), narrowed by the size named nearest before
    it ("Volt in 9 is available", "in M, Black is sold out", "9 kg is sold out" for 9kg). Empty when
    no colour is named."""
    low = before.lower()
    best, at = "", -1
    for _, colour, _ in variants:
        if colour and (i := low.rfind(colour.lower())) > at:
            best, at = colour.lower(), i
    if not best:
        return []
    mine = [(size, n) for size, colour, n in variants if colour.lower() == best]
    where = {size: _last(size, low) for size, _ in mine if size}
    near = max(where.values(), default=-1)
    if near < 0:
        return [n for _, n in mine]
    return [n for size, n in mine if size and where[size] == near]


def _last(size: str, low: str) -> int:
    """Where `size` is last named in `low` ("9kg" also as "9 kg"), -1 if not."""
    pat = re.sub(r"(?<=\d)(?=[a-z])", r"\\s?", re.escape(size.lower()))
    found = [m.start() for m in re.finditer(rf"(?<![\w.]){pat}(?![\w.])", low)]
    return found[-1] if found else -1


def rebind_all(reply: str, claims: list[Claim]) -> list[Claim]:
    """Every money claim of a reply rebound (see `rebind`)."""
    out: list[Claim] = []
    last: dict[int, Claim] = {}
    for c in claims:
        if c.kind == "money":
            prev = last.get(c.clause[0])
            fee = prev is not None and prev.role == "fee"
            out.append(rebind(reply, c, prev.end if prev else c.clause[0], fee))
            last[c.clause[0]] = out[-1]
        else:
            out.append(c)
    return out


def rounding(reply: str, c: Claim, v: int, tol: int) -> int:
    """The tolerance of amount `c` (`v` cents): under a dollar for a whole-dollar amount said to be
    approximate ("about two dollars" for $1.99), else `tol`."""
    return max(tol, 99) if v % 100 == 0 and approximate(reply, c) else tol


def approximate(reply: str, c: Claim) -> bool:
    """"about two dollars", "六十美元左右": a rounded amount."""
    return bool(_APPROX.search(reply[max(0, c.start - 16):c.start]) or _APPROX.match(reply, c.end))


def counts(*texts: str) -> set[int]:
    """Counts a text states (quantities, pack sizes): 2 to two dozen, digits or words."""
    out: set[int] = set()
    for t in texts:
        out.update(int(m.group(1)) for m in _COUNT.finditer(t))
        out.update(_COUNT_WORDS[m.group(0).lower()] for m in _COUNT_WORD.finditer(t))
    return {k for k in out if 2 <= k <= _MAX_COUNT}


def derivable(v: int, stated: Iterable[int], bases: Iterable[int], ks: Iterable[int],
              percents: Iterable[float], tol: int) -> bool:
    """`v` (cents) follows from the amounts by one step (k x a, a x (1 - p%), k x a x (1 - p%), a / k)
    of a stated or base amount, or by a sum or difference of two amounts the reply states (or one of
    them after one step). `stated`: the other amounts the reply or the viewer states (the working
    shown); `bases`: the named products' prices. A sum with an amount nobody stated is no working
    shown: $6.99 + a $14.99 rule nobody mentioned is not accepted."""
    st = sorted({x for x in stated if x > 0})[:_MAX_BASES]
    bs = sorted({x for x in (*st, *bases) if x > 0})[:_MAX_BASES]
    k_set = sorted(set(ks))
    rates = sorted({1 - p / 100 for p in percents if 0 < p < 100})

    def near(x: float) -> bool:
        return abs(v - x) <= tol

    for a in bs:
        for r in (1.0, *rates):
            if any(near(a * k * r) for k in (1, *k_set) if (k, r) != (1, 1.0)):
                return True
        if any(near(a / k) for k in k_set):
            return True
    steps = {round(a * k * r) for a in st for r in (1.0, *rates) for k in (1, *k_set)}
    return any(near(a + b) or near(abs(a - b)) for a in st for b in steps if b != a)

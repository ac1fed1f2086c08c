"""Constraints the viewer states, held against the tool output of the product the reply says fits.

A viewer states a need or a limit ("allergic to peanuts", "under $50", "within 3 days max",
"胸围 120", "need express"); a reply that presents a product as meeting it ("a safe pick for
you", "fits your budget", "在你的预算内") is a confident wrong answer when that product's tool
output contradicts it. Structure, not wording: each constraint kind names how a viewer says it
and which field of the tool output decides it (a table of kinds and fields), and the product is
the one the reply's fit statement is bound to (`_fields.bound_segments`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hatkit.judge.numbers import digits_for_words
from hatkit.judge.patterns import FastPattern

from ._fields import ProductData, bound_segments
from ._glossary import zh_needs
from ._negation import NEGATION, clause_before
from ._usage import _CAUTION, _DECLINE_OPEN


@dataclass(frozen=True)
class Kind:
    """One kind of constraint: how a viewer states it, and what in a product's data breaks it."""

    name: str
    asked: FastPattern
    breaks: re.Pattern[str]


def _kind(name: str, asked: str, breaks: str) -> Kind:
    return Kind(name, FastPattern(asked),
                re.compile(r"(?<!no )(?<!un)(?:" + breaks + r")(?![- ]free|:)", re.I))


_ALLERGIC = r"(?:[- ]?allerg\w*|[- ]?free|[- ]?intoleran\w*)"
KINDS: tuple[Kind, ...] = (
    _kind("peanut allergy", r"peanuts?" + _ALLERGIC + r"|allergic to peanuts?|花生过敏|不能吃花生",
          r"peanut"),
    _kind("tree nut allergy", r"(?:tree[- ]?)?nuts?" + _ALLERGIC + r"|allergic to (?:tree )?nuts|"
          r"坚果过敏",
          r"tree nut|almond|cashew|pecan|walnut|hazelnut|pistachio|macadamia"),
    _kind("milk allergy", r"(?:dairy|milk|lactose)" + _ALLERGIC + r"|allergic to (?:milk|dairy)|"
          r"乳糖不耐|奶过敏",
          r"\bmilk|whey|dairy|cheese|lactose"),
    _kind("egg allergy", r"eggs?" + _ALLERGIC + r"|allergic to eggs?|蛋过敏", r"\beggs?\b"),
    _kind("gluten", r"co?eliac|(?:gluten|wheat)" + _ALLERGIC + r"|麸质|乳糜泻|小麦过敏",
          r"wheat|gluten|barley|\brye\b|semolina"),
    _kind("soy allergy", r"soy" + _ALLERGIC + r"|allergic to soy|大豆过敏", r"\bsoy"),
    _kind("fish allergy", r"fish" + _ALLERGIC + r"|allergic to fish|鱼过敏", r"\bfish|salmon|tuna"),
    _kind("vegan", r"\bvegan|纯素|吃全素",
          r"\bmilk|whey|\beggs?\b|honey|gelatin|beeswax|\bfish|salmon|cheese|"
          r"lanolin|collagen|dairy"),
    _kind("no fragrance", r"(?:no|any|without|avoid|sensitive to) (?:\w+ )?(?:fragrance|scent|perfume)|"
          r"fragrance[- ]free|unscented|scent[- ]free|无香|香味敏感|不要香|没有香味",
          r"fragrance|scent(?:s|ed)?\b|perfume|parfum"),
    _kind("no caffeine", r"caffeine[- ]free|(?:no|without|avoid|zero) caffeine|decaf|"
          r"无咖啡因|不含咖啡因|不要咖啡因",
          r"caffeine: [^|]{0,12}?\d"),
)
"""Constraint kinds decided by the words of a product's fields (allergens, ingredients, materials,
fragrance, caffeine); `breaks` never matches a negated form ("fragrance-free", "no milk")."""

_FIT = FastPattern(
    r"^\W*yes\b|\b(?:safe (?:pick|bet|choice)|fits? (?:your|you|under|within|in|the bill|right)|suits? you|"
    r"works? (?:for|with) (?:you|your|that|it)|perfect (?:for|fit|pick)|go (?:for|with)|recommend\w*|"
    r"(?:pick|choice|option|friend|one) (?:for (?:you|your|the family)|here)|all set|you'?re (?:good|set)|"
    r"good to go|right up your|ideal|will (?:do|handle|work)|no problem|both work|under your|"
    r"within (?:your|the)|(?:is|be) your size|(?:fun|great|good|safe|fine|sturdy) (?:for|enough))\b|"
    r"适合|推荐|没问题|符合|闭眼入|正合适|就好|就行|预算(?:内|里|之内|以内)|能做到|就能收到|刚好合身")
"""A statement that the product meets the viewer's need."""
_BOTH = FastPattern(r"both|all|either|两\w{0,2}都|都")
_VIEWER_WORD = re.compile(r"[a-z]{4,}")
_PLAIN = frozenset({"would", "which", "there", "thing", "something", "looking", "want", "need", "work",
                    "works", "really", "about", "could", "should", "have", "this", "that", "with",
                    "from", "your", "what", "when", "where", "good", "great", "best", "price", "much",
                    "many", "does", "will", "they", "them", "also", "here", "just", "like", "make",
                    "more", "some", "than", "then", "those", "these", "into", "over", "only", "other",
                    "okay", "still", "buy", "get", "pick", "choose", "recommend", "safe", "fine",
                    "please", "thanks", "help", "know", "able", "gonna", "wanna"})
_PLAIN |= frozenset({"without", "along", "after", "before", "through", "because", "since", "though",
                     "whether", "every", "while", "already", "maybe", "around", "enough", "being", "doing",
                     "going", "getting", "having", "into", "onto", "upon", "very", "much", "even", "ever"})
"""Viewer words that state no need of their own (function words, asking words)."""
_DENIES = re.compile(r"\b(?:not|never|cannot|can't|don't|do not|won't)\b")
"""A data clause that denies a use ("do not claim it can charge laptops"); "fragrance-free" denies none."""
_LIMIT_WORD = r"(?:under|below|less than|max(?:imum)?|up to|within|no more than)"
_AMOUNT = r"(\d+(?:\.\d+)?)"
_BUDGET = re.compile(_LIMIT_WORD + r"\s*(?:\$|usd\s?)\s*" + _AMOUNT + "|"
                     + _LIMIT_WORD + r"\s*" + _AMOUNT + r"\s*(?:dollars?|bucks|usd)\b|"
                     r"(?:budget(?: is| of)?:?|预算)\s*(?:\$|usd\s?)?\s*" + _AMOUNT + "|"
                     + _AMOUNT + r"\s*(?:刀|美元|美金|块|元)?\s*(?:以内|以下|之内)", re.I)
"""A spending limit: an amount with a currency or the word budget ("under $50", "budget 40",
"20 刀以内"); "under 3 days" or "up to 12 h" is no budget."""
_ALL_IN = re.compile(r"all[- ]in|incl\w*\.? shipping|with shipping|含运费|加运费|包括运费", re.I)
_COUNT = re.compile(r"\b([2-9]|two|three|four|five)\s+((?:[a-z]+\s){0,2}[a-z]+)", re.I)
"""A count of items the viewer wants ("2 knit sweaters"): it counts if a word names the product."""
_WORDNUM = {"two": 2, "three": 3, "four": 4, "five": 5}
_DEADLINE = re.compile(r"(?:within|in|under)\s+(\d+)\s*(?:business |working )?days?|(\d+)[- ]days? max|"
                       r"(\d+)\s*天(?:之?内|以内)", re.I)
_EXPRESS = re.compile(r"\bexpress\b|expedited|overnight|加急|特快", re.I)
_MEASURE = re.compile(r"(chest|waist|hips?|胸围|腰围|臀围)\D{0,12}?(\d{2,3}(?:\.\d)?)\s*"
                      r"(cm|厘米|in(?:ch(?:es)?)?\b|"
                      r"\"|寸)?|(\d{2,3})\s*(cm|in(?:ch(?:es)?)?|\")\s*(chest|waist|hips?)", re.I)
_ZH_PART = {"胸围": "chest", "腰围": "waist", "臀围": "hip"}
_RANGE = re.compile(r"(\d{2,3})(?:\s?-\s?(\d{2,3}))?\s?cm")


def _fit_sites(reply: str) -> list[int]:
    """Where the reply says the product fits (none when it declines or cautions)."""
    sites = [m.start() for m in _FIT.finditer(reply)]
    if not sites or _DECLINE_OPEN.match(reply) or _CAUTION.search(reply):
        return []
    return [at for at in sites if not NEGATION.search(clause_before(reply, at))]


def _fitted(reply: str, data: Mapping[str, ProductData], sites: list[int]) -> list[ProductData]:
    """The products the fit statements are about: the one bound to each statement's segment,
    else the only product of the episode."""
    segs = bound_segments(reply, data)
    out: list[ProductData] = []
    for at in sites:
        pid = next((p for s, e, p in segs if s <= at < e), None)
        if pid is None and len(data) == 1:
            pid = next(iter(data))
        ids = [pid] if pid is not None else [p for _, _, p in segs] if _BOTH.match(reply, at) else []
        out += [data[i] for i in ids if data[i] not in out]
    return out


def ignored_constraint(users: list[str], reply: str, data: Mapping[str, ProductData],
                       guides: Mapping[str, Mapping[str, str]]) -> tuple[str, str] | None:
    """(the fit statement, the contradicting field) when the reply says a product meets a
    constraint the viewer stated and the product's tool output breaks it."""
    if not data:
        return None
    sites = _fit_sites(reply)
    if not sites:
        return None
    said = digits_for_words(" ".join(users))
    quote, low = reply[sites[0]:sites[0] + 40], reply.lower()
    for p in _fitted(reply, data, sites):
        text = " | ".join(f"{k}: {v}" for k, v in p.fields.items() if k != "options") + " | " + p.positive
        for k in KINDS:
            if k.asked.search(said):
                word = next((m.group(0) for m in k.breaks.finditer(text) if m.group(0).lower() not in low),
                            None)
                if word is not None:
                    return quote, f"{p.pid} data states {word!r} (tool output), against the viewer's {k.name}"
        hit = _forbidden(said + " " + zh_needs(said), p) or _budget(said, reply, p) or _delivery(said, p) \
            or _size(said, reply, guides.get(p.pid))
        if hit is not None:
            return quote, hit
    return None


def _budget(said: str, reply: str, p: ProductData) -> str | None:
    m = _BUDGET.search(said)
    if m is None or p.price is None:
        return None
    limit = float(next(g for g in m.groups() if g))
    kind = {_stem(w) for w in _VIEWER_WORD.findall(p.name.lower())}
    n = next((int(c.group(1)) if c.group(1).isdigit() else _WORDNUM[c.group(1).lower()]
              for c in _COUNT.finditer(said) if {_stem(w) for w in c.group(2).lower().split()} & kind), 1)
    cost = p.price * n + (p.fee if _ALL_IN.search(said) else 0.0)
    if cost > limit + 0.005:
        parts = f"{n} x ${p.price:.2f}" + (f" + ${p.fee:.2f} shipping" if _ALL_IN.search(said) else "")
        return f"{p.pid}: {parts} = ${cost:.2f} (tool output), over the viewer's ${limit:g}"
    return None


def _delivery(said: str, p: ProductData) -> str | None:
    if _EXPRESS.search(said) and p.express is False:
        return f"{p.pid} express_available false (get_shipping_info), against the viewer's need for express"
    m = _DEADLINE.search(said)
    days = p.fields.get("delivery_days", "")
    r = re.fullmatch(r"(\d+)-(\d+)", days)
    if m and r and int(r.group(2)) > int(next(g for g in m.groups() if g)):
        return f"{p.pid} delivery_days {days} (get_shipping_info), longer than the viewer's deadline"
    return None


def _size(said: str, reply: str, guide: Mapping[str, str] | None) -> str | None:
    """The size the reply names leaves out the viewer's measurement, which another size holds."""
    m = _MEASURE.search(said)
    if not guide or m is None:
        return None
    part = (m.group(1) or m.group(6) or "").lower()
    part = _ZH_PART.get(part, part).rstrip("s")
    value = float(m.group(2) or m.group(4))
    if (m.group(3) or m.group(5) or "").lower().startswith(("in", '"', "寸")):
        value *= 2.54
    ranges: dict[str, tuple[float, float]] = {}
    for size, row in guide.items():
        r = _RANGE.search(row) if part in row.lower() else None
        if r:
            lo, hi = float(r.group(1)), float(r.group(2) or r.group(1))
            ranges[size] = (lo - 1, hi + 1) if r.group(2) else (lo - 2, hi + 2)
    named = [s for s in ranges if re.search(r"(?<![A-Za-z0-9])" + re.escape(s) + r"(?![A-Za-z0-9])", reply)]
    holds = [s for s, (lo, hi) in ranges.items() if lo <= value <= hi]
    if len(named) == 1 and holds and named[0] not in holds:
        return f"size guide: {named[0]} is {guide[named[0]]}; {value:g} cm is {holds[0]} (get_size_guide)"
    return None


def _stem(w: str) -> str:
    return w[:5] if len(w) >= 5 else w


def _forbidden(said: str, p: ProductData) -> str | None:
    """A need of the viewer's ("charge my laptop", "climb", "mild") that the product's data names
    only in a negated clause ("do not claim it can charge laptops", "not ... climbed")."""
    name = {_stem(w) for w in _VIEWER_WORD.findall(p.name.lower())}
    specs = " ".join(k for k in p.fields if "_" not in k)  # "battery" names what the data states
    pos = {_stem(w) for w in _VIEWER_WORD.findall(p.positive + " " + specs)} | name
    denied = " | ".join(c for c in p.negative.split(" | ") if _DENIES.search(c))
    neg = {_stem(w): w for w in _VIEWER_WORD.findall(denied)}
    for w in _VIEWER_WORD.findall(said.lower()):
        st = _stem(w)
        if w not in _PLAIN and st in neg and st not in pos:
            clause = next((c for c in denied.split(" | ") if st in c), "")
            return f"{p.pid} data: {clause.strip()!r} (tool output), against the viewer's {w!r}"
    return None

"""Claims a reply makes, found with precompiled regexes: money amounts, percentages, day counts
and ranges, stock statements, "no returns" and "free shipping" statements, product mentions and
coupon codes, each with its text span and (where the wording says) its role.

The role of an amount comes from the words around it ("$3.30 off" is a saving, "orders over
$99" a threshold, "shipping ... $6.99" a fee, "The X is $18.70" the price of product X), so a
checker can compare it with the right value. Extraction is deterministic and cheap (a reply
is extracted thousands of times a second when the judge is an RL reward).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from hatkit.judge.patterns import FastPattern

from ..catalog import Catalog, Product, load_catalog
from ._cues import (
    STOCK_IN,
    STOCK_NUM,
    STOCK_OUT,
    ZH_DISCOUNT,
    days_role,
    kuai_is_count,
    money_bound,
    vague_stock,
    within,
    zh_discount_off,
)
from ._negation import NEGATION as NEGATION
from ._negation import clause_before as clause_before

Kind = Literal["money", "percent", "days", "stock", "returns", "free_shipping", "product", "coupon"]
MoneyRole = Literal["price", "list", "saving", "fee", "threshold", "total", "amount"]


@dataclass(frozen=True, slots=True)
class Claim:
    """One statement found in a text."""

    kind: Kind
    text: str
    """The matched text, e.g. '$18.70', '2-5 days', 'sold out', 'LIVE15'."""
    start: int
    end: int
    value: float | None = None
    """money: the amount; percent: the percentage (a zh "8折" is 20); days: the (low) count;
    stock: units (0 = sold out; None = "in stock" without a number); returns: 0 (no returns)."""
    high: float | None = None
    """days: the upper end of a range ("2-5 days": value 2, high 5)."""
    role: str = ""
    """money: price, list, saving, fee, threshold, total or amount (no cue); days: delivery,
    return or other; percent: discount or other."""
    product_id: str | None = None
    """product: the product named; money with role price: the product it is the price of."""
    negated: bool = False
    """The clause around it negates or declines ("HACK90 is not a valid code")."""
    clause: tuple[int, int] = (0, 0)
    """Span of the clause (sentence part between . ! ? ; and their CJK forms) holding it."""
    bound: str = ""
    """An upper bound, not a value: money "under" / "just_under" ("just under $20"); days "max"
    ("within two days": value 0, high 2)."""


# ---- patterns ---------------------------------------------------------------------------------
_AMT = r"(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?(?![\d])"
_MONEY = (
    re.compile(r"(?:US\$|\$|USD\s?|¥|￥)\s?" + _AMT, re.I),
    re.compile(r"(?<![A-Za-z0-9_.$¥￥])" + _AMT
               + r"\s?(?:dollars?|bucks|usd|美元|美金|元|块钱|块)(?![A-Za-z])", re.I),
)
_PERCENT = FastPattern(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s?(?:%|％|\s?percent\b)", re.I)
_DAY_UNIT = r"(?:business |working |calendar )?(?:days?\b|天|个?工作日)"
_DAY_RANGE = FastPattern(r"(?<![\d.])(\d{1,3})\s?(?:-|–|—|~|to|到|至)\s?(\d{1,3})\s?" + _DAY_UNIT, re.I)
_DAY_ONE = FastPattern(r"(?<![\d.])(\d{1,3})(?:\s?-\s?|\s)?" + _DAY_UNIT, re.I)
_NO_RETURNS = FastPattern(r"\bno returns?\b|\bcan(?:no|')t be returned\b|\bnot returnable\b|"
                          r"\bnon-returnable\b|\bfinal sale\b|不支持退货|不能退|无法退|不可退|不接受退货",
                          re.I)
_CONDITIONAL = re.compile(r"opened|used|worn|开封|拆封|使用过|用过", re.I)
_FREE_SHIP = FastPattern(r"\bfree (?:standard )?shipping\b|"
                         r"\bships? (?:(?:it|them|this|that|these) )?(?:for )?free\b|"
                         r"\bshipping(?:'s| is| will be| would be)? (?:totally |completely )?free\b|"
                         r"\bshipping\b(?:[^.!?;。！？；]|\.(?=\d)){0,40}?\bis free\b|"
                         r"\bshipping(?:'s| is) on us\b|\bfree delivery\b|"
                         r"\bship (?:it|them|this|that)(?: \w+)? free\b|"
                         r"免运费|包邮|免邮|运费全免|不收运费", re.I)
_SERVICE = re.compile(r"\b(?:express|shipping|delivery|pick-?up|gift wrap\w*|option)\b\W*(?:\w+\W+)?$|"
                      r"加急|快递", re.I)
_CODE = re.compile(r"(?<![A-Za-z0-9-])([A-Z][A-Z0-9]{3,19})(?![A-Za-z0-9-])")
_CODE_CUE = re.compile(r"(?:code|coupon|voucher|promo|优惠码|优惠券|券|码)\s?[:：]?\s?$", re.I)
_PRODUCT_ID = re.compile(r"(?<![A-Za-z0-9-])([A-Za-z]{2})-(\d{3})(?![A-Za-z0-9])")
_TOKEN = re.compile(r"[A-Za-z0-9]+")
_CLAUSE_END = re.compile(r"[.!?](?=\s|$)|[;。！？；\n]")

# role cues: the text right after an amount, right before it (since the previous amount), or
# anywhere earlier in its clause
_AFTER_SAVING = re.compile(r"\s?(?:off\b|discount|savings?\b|折|的优惠|的折扣|优惠)", re.I)
_AFTER_TOTAL = re.compile(r"\s?(?:order|cart|purchase|basket|total)\b|"
                          r"\s?(?:的订单|订单|的单|的单子|的购物车)", re.I)
AFTER_FEE = re.compile(r"\s?(?:shipping|delivery fee|postage|(?:express |standard )?fee\b|运费|邮费)", re.I)
"""Words right after an amount that make it a fee (also read by _derive)."""
_AFTER_THRESHOLD = re.compile(r"\s?(?:or more|and up|and above|\+|以上|起)", re.I)
_BEFORE_SAVING = re.compile(r"(?:\bsave|\bsaving|\bsavings|\bdiscount(?: of)?|\bless|省|便宜|减|立减|优惠)"
                            r"\s?(?:of |up to |about |you )?$", re.I)
_BEFORE_LIST = re.compile(r"(?:list price|regular(?: price)?|original(?:ly)?(?: price)?|\bwas|retail|msrp|"
                          r"(?:down|reduced|marked down|discounted) from|instead of|usually|normally|"
                          r"原价|划线价)\s?(?:is|of|at|[:：]|是|为)?\s?$", re.I)
_BEFORE_THRESHOLD = re.compile(r"(?:\bover|\babove|at least|\bfrom|spend(?:ing)?|orders? of|orders? over|"
                               r"\b(?:hits?|reach(?:es)?|passes|crosses|tops)|满|"
                               r"超过|达到|凑够?|满额)\s?$", re.I)
_FEE_WORDS = re.compile(r"shipping|delivery fee|\bfee\b|express|postage|\botherwise\b|"
                        r"运费|邮费|快递|否则", re.I)
_BEFORE_TOTAL = re.compile(r"(?:total|cart|subtotal|合计|总共|凑单|总价)", re.I)
_BEFORE_PRICE = re.compile(r"(?:price|cost|costs|\bonly|\bjust|now|售价|价格|卖|只要|仅需|现价|是)\s?"
                           r"(?:is|of|at|[:：])?\s?$", re.I)
_DISCOUNT_CTX = re.compile(r"\boff\b|discount|coupon|\bcode\b|voucher|\bsale\b|\bdeal|折|优惠|券|减", re.I)
_STOPWORDS = frozenset({"and", "for", "the", "with", "of", "in", "on", "a", "an", "to", "de"})


# ---- the catalog lexicon: product names and their unique short forms, coupon codes -------------
@dataclass(frozen=True)
class Lexicon:
    """What claim extraction needs from a catalog (build with `lexicon(catalog)`; cached)."""

    catalog: Catalog
    products: dict[str, Product]
    aliases: dict[str, list[tuple[tuple[str, ...], str]]]
    """First token (lower case) -> [(tokens, product id)], longest first."""
    coupon_codes: frozenset[str]
    not_codes: frozenset[str]
    """Upper-case tokens of catalog text (SPF, ANC, ...): never coupon codes."""
    names: dict[str, str] = field(default_factory=dict)
    """Product id -> name."""
    found: dict[str, tuple[Claim, ...]] = field(default_factory=dict, compare=False, repr=False)
    """Memos: `find_products` per text (asked five or six times a viewer message), and `numbers`
    the numbers each product's catalog entry states (grounding)."""
    numbers: dict[str, frozenset[float]] = field(default_factory=dict, compare=False, repr=False)


def _content(token: str) -> bool:
    return sum(c.isalpha() for c in token) >= 2 and token.lower() not in _STOPWORDS


def _build(catalog: Catalog) -> Lexicon:
    grams: dict[tuple[str, ...], set[str]] = {}
    full: dict[tuple[str, ...], str] = {}
    for p in catalog.products:
        toks = tuple(t.lower() for t in _TOKEN.findall(p.name))
        full[toks] = p.id
        for i in range(len(toks)):
            for j in range(i + 2, len(toks) + 1):
                gram = toks[i:j]
                if _content(gram[0]) and (_content(gram[-1]) or (gram[-1].isdigit() and len(gram) == 2)):
                    grams.setdefault(gram, set()).add(p.id)
    aliases: dict[str, list[tuple[tuple[str, ...], str]]] = {}
    entries = {g: next(iter(ids)) for g, ids in grams.items() if len(ids) == 1}
    entries.update(full)
    for gram, pid in entries.items():
        aliases.setdefault(gram[0], []).append((gram, pid))
    for lst in aliases.values():
        lst.sort(key=lambda e: -len(e[0]))
    text = " ".join(" ".join([p.name, p.brand, p.description, *p.specs.values(), *p.materials])
                    for p in catalog.products)
    not_codes = frozenset(_CODE.findall(text)) | {"USD", "SKU", "HTTP", "HTTPS"}
    return Lexicon(catalog, {p.id: p for p in catalog.products}, aliases,
                   frozenset(c.code for c in catalog.coupons), not_codes,
                   {p.id: p.name for p in catalog.products})


_LEXICONS: dict[int, Lexicon] = {}


def lexicon(catalog: Catalog | None = None) -> Lexicon:
    """The lexicon of `catalog` (default: the shipped one), built once per catalog object."""
    cat = catalog if catalog is not None else load_catalog()
    hit = _LEXICONS.get(id(cat))
    if hit is None or hit.catalog is not cat:
        hit = _LEXICONS[id(cat)] = _build(cat)
    return hit


def find_products(text: str, lex: Lexicon | None = None) -> list[Claim]:
    """Product mentions: full names, unique word sequences of a name ("Pullover Hoodie"),
    and ids (EL-003), case-insensitive, longest match first, without overlaps."""
    lex = lex or lexicon()
    hit = lex.found.get(text)
    if hit is None:
        if len(lex.found) >= 4096:  # bounded: RL judges many distinct messages
            lex.found.clear()
        hit = lex.found[text] = tuple(_find_products(text, lex))
    return list(hit)


def _find_products(text: str, lex: Lexicon) -> list[Claim]:
    out: list[Claim] = []
    toks = list(_TOKEN.finditer(text))
    low = [t.group(0).lower() for t in toks]
    i = 0
    while i < len(toks):
        best: tuple[int, str] | None = None
        for gram, pid in lex.aliases.get(low[i], ()):
            n = len(gram)
            if tuple(low[i:i + n]) == gram and _joined(text, toks, i, n):
                best = (n, pid)
                break
        if best is None:
            i += 1
            continue
        n, pid = best
        s, e = toks[i].start(), toks[i + n - 1].end()
        out.append(Claim("product", text[s:e], s, e, product_id=pid))
        i += n
    for m in _PRODUCT_ID.finditer(text):
        pid = f"{m.group(1).upper()}-{m.group(2)}"
        if pid in lex.products and not any(c.start <= m.start() < c.end for c in out):
            out.append(Claim("product", m.group(0), m.start(), m.end(), product_id=pid))
    out.sort(key=lambda c: c.start)
    return out


def _joined(text: str, toks: Sequence[re.Match[str]], i: int, n: int) -> bool:
    """Tokens i..i+n-1 are separated only by spaces, hyphens or '%' (one phrase)."""
    for k in range(i, i + n - 1):
        gap = text[toks[k].end():toks[k + 1].start()]
        if len(gap) > 3 or gap.strip(" -%'’&") != "":
            return False
    return True


# ---- extraction -------------------------------------------------------------------------------
def _clauses(text: str) -> list[int]:
    """Start offsets of clauses."""
    return [0] + [m.end() for m in _CLAUSE_END.finditer(text)]


def _clause_of(starts: list[int], text: str, pos: int) -> tuple[int, int]:
    k = bisect.bisect_right(starts, pos) - 1
    end = starts[k + 1] if k + 1 < len(starts) else len(text)
    return starts[k], end


def _free(spans: list[tuple[int, int]], s: int, e: int) -> bool:
    return not any(s < b and a < e for a, b in spans)


def extract_claims(text: str, lex: Lexicon | None = None) -> list[Claim]:
    """Every claim in `text`, in text order (products included)."""
    lex = lex or lexicon()
    starts = _clauses(text)
    products = find_products(text, lex)
    taken = [(c.start, c.end) for c in products]
    found: list[Claim] = []

    def add(kind: Kind, m: re.Match[str], value: float | None, high: float | None = None,
            exclusive: bool = True, span: tuple[int, int] | None = None) -> None:
        s, e = span or m.span()  # a long stock phrase holds its number only (names may sit inside)
        if exclusive:
            if not _free(taken, s, e):
                return
            taken.append((s, e))
        cl = _clause_of(starts, text, s)
        found.append(Claim(kind, text[s:e], s, e, value, high, clause=cl,
                           negated=bool(NEGATION.search(text, cl[0], cl[1]))))

    for pat in _MONEY:
        for m in pat.finditer(text):
            if kuai_is_count(text, m.start(), m.end()):
                continue  # "还剩2块": two pieces, not two yuan
            whole, cents = m.group(1).replace(",", ""), m.group(2)
            add("money", m, float(f"{whole}.{cents}" if cents else whole))
    for m in _DAY_RANGE.finditer(text):
        add("days", m, float(m.group(1)), float(m.group(2)))
    for m in _DAY_ONE.finditer(text):
        add("days", m, float(m.group(1)))
    for m in _PERCENT.finditer(text):
        add("percent", m, float(m.group(1)))
    for m in ZH_DISCOUNT.finditer(text):
        if (off := zh_discount_off(m.group(1))) is not None:
            add("percent", m, off)
    for pat in STOCK_NUM:
        for m in pat.finditer(text):
            add("stock", m, float(m.group(1)), span=m.span(1) if m.end() - m.start() > 12 else None)
    for m in STOCK_OUT.finditer(text):
        add("stock", m, 0.0)
    for m in STOCK_IN.finditer(text):
        if _SERVICE.search(text[max(0, m.start() - 30):m.start()]):  # "express is available"
            continue
        vague = vague_stock(m.group(0))
        add("stock", m, vague[0] if vague else None, vague[1] if vague else None)
    for m in _NO_RETURNS.finditer(text):
        cl = _clause_of(starts, text, m.start())
        if not _CONDITIONAL.search(text, cl[0], cl[1]):
            add("returns", m, 0.0)
    for m in _FREE_SHIP.finditer(text):
        add("free_shipping", m, 0.0, exclusive=False)  # may span an amount ("shipping on $X is free")
    for m in _CODE.finditer(text):
        tok = m.group(1)
        cue = _CODE_CUE.search(text[max(0, m.start() - 12):m.start()])
        is_code = tok in lex.coupon_codes or (
            tok not in lex.not_codes and (
                (any(c.isdigit() for c in tok) and sum(c.isalpha() for c in tok) >= 2)
                or (cue is not None and len(tok) >= 5)))
        if is_code:
            add("coupon", m, None)
    found.sort(key=lambda c: c.start)
    return _assign_roles(text, [*found, *products], starts)


def _assign_roles(text: str, claims: list[Claim], starts: list[int]) -> list[Claim]:
    claims.sort(key=lambda c: c.start)
    out: list[Claim] = []
    prev_end: dict[int, int] = {}  # clause start -> end of the previous money/product there
    last_product: dict[int, str | None] = {}
    for c in claims:
        cl = c.clause if c.kind != "product" else _clause_of(starts, text, c.start)
        if c.kind == "product":
            prev_end[cl[0]] = c.end
            last_product[cl[0]] = c.product_id
            out.append(Claim(c.kind, c.text, c.start, c.end, product_id=c.product_id, clause=cl))
            continue
        if c.kind == "money":
            since = text[max(cl[0], prev_end.get(cl[0], cl[0]), c.start - 40):c.start]
            role, pid = _money_role(text, c, cl, since, last_product.get(cl[0]))
            prev_end[cl[0]] = c.end
            last_product[cl[0]] = None  # an amount between a name and the next amount breaks the link
            bound = money_bound(text[max(0, c.start - 24):c.start])
            out.append(_with(c, role=role, product_id=pid, bound=bound))
        elif c.kind == "days":
            drole = days_role(text, c.start, c.end, c.high is not None, cl)
            if drole == "delivery" and c.high is None and within(text, c.start, c.end):
                c = Claim(c.kind, c.text, c.start, c.end, 0.0, c.value, negated=c.negated, clause=c.clause,
                          bound="max")  # "within two days": at most two
            out.append(_with(c, role=drole))
        elif c.kind == "percent":
            disc = bool(_DISCOUNT_CTX.search(text, cl[0], cl[1]))
            out.append(_with(c, role="discount" if disc else "other"))
        else:
            out.append(c)
    return out


def _with(c: Claim, role: str, product_id: str | None = None, bound: str = "") -> Claim:
    return Claim(c.kind, c.text, c.start, c.end, c.value, c.high, role, product_id, c.negated, c.clause,
                 bound or c.bound)


def _money_role(text: str, c: Claim, cl: tuple[int, int], since: str, product: str | None,
                ) -> tuple[MoneyRole, str | None]:
    after = text[c.end:c.end + 14]
    if _AFTER_SAVING.match(after):
        return "saving", None
    if _AFTER_TOTAL.match(after):
        return "total", None
    if _AFTER_THRESHOLD.match(after):
        return "threshold", None
    if AFTER_FEE.match(after):
        return "fee", None
    if _BEFORE_SAVING.search(since):
        return "saving", None
    if _BEFORE_LIST.search(since):
        return "list", None
    if _BEFORE_THRESHOLD.search(since):
        return "threshold", None
    if _FEE_WORDS.search(text, cl[0], c.start):
        return "fee", None
    if _BEFORE_TOTAL.search(since):
        return "total", None
    if product is not None:
        return "price", product
    if _BEFORE_PRICE.search(since):
        return "price", None
    return "amount", None


def of_kind(claims: Iterable[Claim], *kinds: Kind) -> list[Claim]:
    return [c for c in claims if c.kind in kinds]


@lru_cache(maxsize=4096)
def money_values(text: str) -> tuple[float, ...]:
    """Amounts written in `text` (e.g. in a promotion description), cached."""
    out = []
    for pat in _MONEY:
        for m in pat.finditer(text):
            whole, cents = m.group(1).replace(",", ""), m.group(2)
            out.append(float(f"{whole}.{cents}" if cents else whole))
    return tuple(out)


@lru_cache(maxsize=4096)
def percent_values(text: str) -> tuple[float, ...]:
    return tuple(float(m.group(1)) for m in _PERCENT.finditer(text))


def cents(x: float) -> int:
    return round(x * 100)

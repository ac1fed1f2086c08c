"""Unfounded details: specifics a reply states that nothing in the episode supports.

The claim checks verify prices, discounts, windows and stock; a reply can also invent details
of other kinds, and these checks ground them in the episode's sources (successful tool outputs
with their keys, the viewer's words, the harness's rules and system prompt, the catalog data of
the products in play) without any list of known inventions:

- quantities must be supported with a compatible unit ("30 people" is not a 30-day window);
- capitalised names inside a sentence (a brand, place or colour) must occur in the sources;
- a date, weekday or relative day ("by Tuesday", "下周二") must be one a tool or the viewer gave;
- a detail kind the sources never speak of at all (a free gift, where or how it is made, a
  certification) is unfounded wherever it is stated;
- a coupon code stated as usable must come from a tool result or the viewer (a negation later in
  the clause, "no minimum spend", does not make the code a declined one).

A negated clause ("I can't promise Friday", "不送赠品") states nothing and is not checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from hatkit.agent.trace import ok_record
from hatkit.judge.patterns import FastPattern

from ._conversions import converted_values
from ._episode import _Turn
from ._features import unfounded_feature
from ._memo import per_object
from ._quantities import quantities, source_quantities, supported, word_quantities
from ._run import _RunBase
from .claims import NEGATION, Claim, Lexicon, clause_before

_NAME_RUN = re.compile(r"(?<![A-Za-z0-9])[A-Z][a-z]{2,}(?:['’]s)?(?:[ -][A-Z][a-z]+(?:['’]s)?)*"
                       r"(?![A-Za-z0-9])")
_NUMBER_AT = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_SOURCE_WORD = re.compile(r"[a-z]{3,}")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december")
_DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MON = r"(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*"
_MONTH_DAY = FastPattern(r"\b" + _MON + r"\.? (\d{1,2})(?:st|nd|rd|th)?\b|"
                         r"\b(\d{1,2})(?:st|nd|rd|th)? (?:of )?" + _MON + r"\b|"
                         r"(\d{1,2})月(\d{1,2})[日号]?", re.I)
_RELATIVE = FastPattern(r"\b(?:" + "|".join(_DAYS) + r"|(?:january|february|april|june|july|august|september|"
                        r"october|november|december)|tomorrow|next (?:week|weekend|month)|"
                        r"(?:by|over|on) the weekend|end of (?:the )?(?:week|month))\b|"
                        r"(?:下|这|本|上)?(?:周|星期|礼拜)[一二三四五六日天]|明天|后天|明早|"
                        r"下周|下个?星期|下个?月|月底|周末", re.I)
_ZH_RELATIVE = {"明天": "tomorrow", "后天": "tomorrow", "下周": "next week", "下星期": "next week",
                "下个星期": "next week", "周末": "weekend",
                "下个月": "next month", "下月": "next month", "月底": "end of the month"}
_SOURCE_DATE = re.compile(r"\b\d{4}-(\d{2})-(\d{2})\b")

# detail kinds: (what the reply says, what a source must say for the kind to be grounded at all)
_KINDS: tuple[tuple[str, re.Pattern[str], re.Pattern[str]], ...] = (
    ("a free gift or bonus item",
     re.compile(r"\bfree gifts?\b|\bgifts? with\b|\bbonus\b|\bcomplimentary\b|"
                r"\b(?:comes?|ships?) with a free\b|\bthrow(?:s|ing)? in (?:a |an )?free\b|赠|"
                r"(?:还|再|另|加|并|免费)送(?![达到货])|送(?:你|一|个|两|\d)|"
                r"\b(?:gets?|receives?|comes? with|includ(?:es|ing)) (?:a |an )?free "
                r"(?!shipping|delivery|return)\w",
                re.I),
     re.compile(r"gift|bonus|complimentary|free\b[^.;,]{0,40}\bwith\b|included|赠")),
    ("a promotion no tool result lists",  # a deal's shape: a second item half off, points, a price match
     re.compile(r"\bbuy (?:one|1|two|2),? get\b|\bbogo\b|\bhalf[- ](?:off|price)\b|"
                r"\bdouble (?:reward )?points\b|\b(?:reward|loyalty|bonus) points\b|"
                r"\bstudent (?:discount|id|price)\b|\bprice[- ]match|"
                r"\bmatch (?:the|their|a|any|that) (?:lower )?price|"
                r"半价|买一送一|买\d送\d|积分|学生(?:价|优惠|证)|比价|保价|按更低价", re.I),
     re.compile(r"half|bogo|buy one|buy \d|points|student|price match|半价|买一送一|积分|学生|比价|保价")),
    ("where or how it is made",
     re.compile(r"\bhand-?(?:made|crafted|knit(?:ted)?|sewn|stitched|woven|poured|painted|picked)\b|"
                r"\bmade in\b|\b(?:sourced|imported|produced|grown|harvested|manufactured) (?:in|from)\b|"
                r"手工|手作|产自|产于|原产|产地|进口|制造于|出产|直供|直采|产区", re.I),
     re.compile(r"origin|made in|hand-?(?:made|crafted|knit|sewn|stitched|woven|poured|painted|picked)|"
                r"sourced|imported|produced|grown|harvested|manufactur|产地|产自|手工")),
    ("a certification",
     re.compile(r"\bcertifi(?:ed|cation)\b|\baccredited\b|认证", re.I),
     re.compile(r"certifi|accredit|认证")),
    ("how to wash or clean it",
     re.compile(r"\bmachine[- ]?wash|\bwashing machine|\bwashable\b|\bdishwasher\b|\bdry[- ]clean|"
                r"\btumble[- ]dry|\bhand[- ]wash|机洗|手洗|水洗|可洗|洗衣机|洗碗机|干洗", re.I),
     re.compile(r"wash|dishwasher|dry[- ]clean|tumble|\bcare\b|洗")),
    ("when it is dispatched",
     re.compile(r"\bships? (?:out )?(?:today|tonight|same[- ]day|right away|immediately|"
                r"within (?:the|an|\d+))|\bsame[- ]day\b|"
                r"\b(?:in|within) the next (?:hour|\d+ (?:hours|minutes))|\bwithin the hour\b|"
                r"当天发|今天发|当日发|今天(?:就|就能|即可)?发出|马上发|立即发|\d+小时内发", re.I),
     re.compile(r"dispatch|same[- ]day|handling|cut-?off|当天|当日")),
    ("a warranty",
     re.compile(r"\bwarrant(?:y|ies|eed)\b|\bguarantee[ds]?\b|保修|质保|包换", re.I),
     re.compile(r"warrant|guarantee|保修|质保")),
)


_ANSWER_NO = re.compile(r"^\W*(?:no|nope|nah|not really|not at all|not quite|not exactly|sadly not|"
                        r"afraid not|不是?|没有|不太够|不够)\s*[,，!！:：]", re.I)
"""A leading "Nope," answers the viewer's question; it does not negate what the clause then states."""


_ANY_KIND = FastPattern("|".join(f"(?P<k{i}>{said.pattern})" for i, (_, said, _) in enumerate(_KINDS)))
"""The kinds' phrases in one pattern: one scan of a reply, not one per kind."""
_KIND_KEYS = ("gift", "bonus", "half", "bogo", "buy one", "buy 1", "buy two", "buy 2", "points", "student",
              "match", "半价", "积分",
              "学生", "比价", "保价", "低价", "complimentary", "free", "made", "hand", "sourced", "imported",
              "produced",
              "grown", "harvested", "manufactured", "certifi", "accredit", "wash", "dishwasher", "dry",
              "ship", "same", "next", "within", "warrant", "guarantee", "赠", "送", "手", "产", "进口",
              "制造", "直", "认证", "洗", "发", "保修", "质保", "包换")
"""Substrings every kind's phrase holds: most replies hold none and skip the scan."""


def _negated(text: str, pos: int) -> bool:
    clause = clause_before(text, pos)
    return bool(NEGATION.search(_ANSWER_NO.sub(" ", clause, count=1)))


_QUESTION = re.compile(r"[^.!?。！？\n]*[?？]")


def _statements(text: str) -> str:
    """A viewer's turn without its questions: what the viewer states, not what they ask about."""
    return _QUESTION.sub(" ", text)


def _inside(spans: Iterable[tuple[int, int]], s: int, e: int) -> bool:
    return any(s < b and a < e for a, b in spans)


class _DetailChecks(_RunBase):
    """Specific details of a reply grounded in the episode (see the module docstring)."""

    invented: bool = False
    """This turn's reply states a detail nothing supports: a confident answer, if a wrong one."""

    def _details(self, turn: _Turn, claims: list[Claim]) -> None:
        reply = turn.reply
        if not reply:
            return
        spans = [(c.start, c.end) for c in claims]
        memo: list[str] = []
        self._told_memo = ""

        def src() -> str:  # built only when a check has something to ground (most replies: never)
            if not memo:
                memo.append(self._detail_sources())
            return memo[0]

        for check in (self._units, self._names, self._dates, self._kinds, self._codes, self._features):
            found = check(reply, spans, claims, src)
            if found:
                self.acc(found[0], False, found[1], "trace:grounding")
                self.invented = True

    _told_memo = ""

    def _told(self) -> str:
        """This turn's sources without the viewer's turns (built once a turn, when needed)."""
        if not self._told_memo:
            self._told_memo = self._detail_sources(users=False)
        return self._told_memo

    def _detail_sources(self, users: bool = True) -> str:
        """Lower-cased text of what may support a detail: successful tool outputs (keys included),
        the viewer's turns (unless not `users`), the system prompt, and the catalog data of the
        products in play."""
        parts = [json.dumps(r.output, ensure_ascii=False) for r in self.t.tool_calls if ok_record(r)]
        parts += self._users if users else []
        parts += [s.text for s in self.t.spans if s.segment == "system"]
        for pid in self.scope.products():
            p = self.lex.products.get(pid)
            if p is not None:
                parts += [p.name, p.brand, p.description, *p.specs, *p.specs.values(), *p.materials]
        return "\n".join(parts).lower()

    def _units(self, reply: str, spans: list[tuple[int, int]], claims: list[Claim], src: Callable[[], str]
               ) -> tuple[str, str] | None:
        said = [(m.start(), m.end(), v, u) for m, v, u in quantities(reply)] + word_quantities(reply)
        said = [q for q in said if q[3] is not None and q[3][0] != "money" and not _inside(spans, q[0], q[1])
                and not _negated(reply, q[0])]
        if not said:
            return None
        known = self._source_quantities()
        for s, e, v, u in said:
            if u is not None and not supported(v, u, known) and v not in converted_values(reply):
                return reply[s:e].strip(), ("a quantity no tool result, rule or viewer message states "
                                            "in that unit")
        return None

    def _source_quantities(self) -> list[tuple[float, tuple[str, float] | None]]:
        known: list[tuple[float, tuple[str, float] | None]] = []
        for r in self.t.tool_calls:
            if ok_record(r):
                source_quantities(r.output, known)
                source_quantities(r.arguments, known)
        for u in self._users:
            source_quantities(u, known)
        known += _rule_quantities(self.a.rules)
        for pid in self.scope.products():
            known += _product_quantities(self.lex, pid)
        return known

    def _converted(self, reply: str, pos: int) -> bool:
        """The number at `pos` is a source's value converted to another unit ("50 inches" for 127 cm),
        or a right conversion of the quantity before it ("260 C, about 500 F": see _conversions)."""
        n = _NUMBER_AT.match(reply, pos)
        if n and float(n.group(0).replace(",", "")) in converted_values(reply):
            return True
        said = next(((v, u) for m, v, u in quantities(reply) if m.start() == pos), None)
        return said is not None and said[1] is not None and said[1][0] != "count" \
            and supported(said[0], said[1], self._source_quantities())

    def _names(self, reply: str, spans: list[tuple[int, int]], claims: list[Claim], src: Callable[[], str]
               ) -> tuple[str, str] | None:
        words: set[str] | None = None
        for m in _NAME_RUN.finditer(reply):
            before = reply[:m.start()].rstrip()
            if not before or not (before[-1].isalnum() or before[-1] == ",") \
                    or _inside(spans, m.start(), m.end()) \
                    or _negated(reply, m.start()):
                continue  # the start of a sentence or clause, a product name, or a negated clause
            if words is None:  # "does it have Netflix?" does not establish that it does
                words = set(_SOURCE_WORD.findall(self._told())) | _catalog_words(self.lex)
                words |= {w for u in self._users for w in _SOURCE_WORD.findall(_statements(u).lower())}
            for w in re.split(r"[ -]", m.group(0)):
                low = re.sub(r"['’]s$", "", w.lower())
                if low not in words and low not in _DAYS and low not in _MONTHS:
                    return m.group(0), "a name no tool result or viewer message mentions"
        return None

    def _dates(self, reply: str, spans: list[tuple[int, int]], claims: list[Claim], src: Callable[[], str]
               ) -> tuple[str, str] | None:
        for m in _MONTH_DAY.finditer(reply):
            if _negated(reply, m.start()):
                continue
            if _month_day(m) not in {(int(a), int(b)) for a, b in _SOURCE_DATE.findall(src())}:
                return m.group(0), "a date no tool result or viewer message gives"
        for m in _RELATIVE.finditer(reply):
            said = m.group(0).lower()
            if _negated(reply, m.start()) or said in src() or _ZH_RELATIVE.get(said, "\0") in src():
                continue
            return m.group(0), "a day or date no tool result or viewer message gives"
        return None

    def _kinds(self, reply: str, spans: list[tuple[int, int]], claims: list[Claim], src: Callable[[], str]
               ) -> tuple[str, str] | None:
        low = reply.lower()
        if not any(k in low for k in _KIND_KEYS):
            return None
        # a viewer's question ("any free gift?") does not establish that there is one: _told()
        for m in _ANY_KIND.finditer(reply):
            what, _, grounds = _KINDS[int(m.lastgroup[1:])]  # type: ignore[index]
            if not _negated(reply, m.start()) and not grounds.search(self._told()):
                return m.group(0), f"{what}: no tool result in this episode mentions one"
        return None

    def _features(self, reply: str, spans: list[tuple[int, int]], claims: list[Claim], src: Callable[[], str]
                  ) -> tuple[str, str] | None:
        if not self.scope.products():  # nothing looked up or named: no data to hold a feature to
            return None
        found = unfounded_feature(reply, self._told, spans)
        if found is None or _negated(reply, found[0]):
            return None
        return found[1], found[2]

    def _codes(self, reply: str, spans: list[tuple[int, int]], claims: list[Claim], src: Callable[[], str]
               ) -> tuple[str, str] | None:
        """Codes the claim check skipped as negated, though the negation only follows the code."""
        for c in claims:
            if c.kind != "coupon" or not c.negated or _negated(reply, c.start):
                continue
            if c.text.upper() not in self.scope.codes and c.text.lower() not in src():
                return c.text, "a coupon code no tool result or viewer message gives"
        return None


@per_object
def _catalog_words(lex: Lexicon) -> frozenset[str]:
    """Words of the store's product names and brands (a name is the store's vocabulary), per lexicon."""
    return frozenset(w for p in lex.products.values()
                     for w in _SOURCE_WORD.findall(f"{p.name} {p.brand}".lower()))


@per_object
def _rule_quantities(rules: Mapping[str, Any]) -> list[tuple[float, tuple[str, float] | None]]:
    """The numbers of a harness's rules with the units their names give (per rules object)."""
    known: list[tuple[float, tuple[str, float] | None]] = []
    source_quantities(dict(rules), known)
    return known


_PRODUCT_QUANTITIES: dict[tuple[int, str], tuple[Lexicon, list[tuple[float, tuple[str, float] | None]]]] = {}


def _product_quantities(lex: Lexicon, pid: str) -> list[tuple[float, tuple[str, float] | None]]:
    """The numbers of a product's catalog data with their units (per lexicon and product)."""
    hit = _PRODUCT_QUANTITIES.get((id(lex), pid))
    if hit is None or hit[0] is not lex:
        known: list[tuple[float, tuple[str, float] | None]] = []
        if (p := lex.products.get(pid)) is not None:
            source_quantities([p.name, p.description, dict(p.specs), list(p.materials)], known)
        hit = _PRODUCT_QUANTITIES[(id(lex), pid)] = (lex, known)
    return hit[1]


def _month_day(m: re.Match[str]) -> tuple[int, int]:
    if m.group(1):
        return _month(m.group(1)), int(m.group(2))
    if m.group(4):
        return _month(m.group(4)), int(m.group(3))
    return int(m.group(5)), int(m.group(6))


def _month(name: str) -> int:
    return next(i for i, full in enumerate(_MONTHS, 1) if full.startswith(name.lower()[:3]))

"""Claims of a kind no tool can source: popularity, urgency and after-sales terms.

The shop's tools return product data, stock, shipping, promotions, return windows and tickets.
None returns reviews, ratings, sales figures, what other shoppers do, when a batch is the last
one, a warranty's length, a refund's speed or channel, restocking fees, price protection,
prepaid labels, free exchanges, compensation or a replacement sent ahead. A reply that states
a claim of such a kind states something nothing in the episode supports (accuracy), however
it is worded.

Each kind is defined by its structure, not by an item's wording: a number with the kind's unit
("4.8 stars", "10k sold", "2-year warranty", "15% restocking fee", "好评率 99%"), a quantifier
over a crowd of people ("hundreds of viewers", "most of our buyers", "三千多人"), or the kind's
own noun (a voucher, store credit, a prepaid label). A kind is grounded when a successful tool
output of the episode speaks of it in a clause that does not negate it ("no returns or
exchanges" grounds no free exchange); a negated claim ("no restocking fee", "I can't promise a
refund date") states nothing and is not checked.
"""

from __future__ import annotations

import json
import re

from hatkit.agent.trace import ok_record
from hatkit.judge.patterns import FastPattern

from ._episode import _Turn
from ._run import _RunBase
from .claims import NEGATION, clause_before

_N = (r"(?:\d{3,}|\d[\d,]*,\d{3}|\d+(?:\.\d)?\s?[kK]\+?|\d+\+|hundreds|thousands|dozens|tons|loads|lots|"
      r"half|most|many|nearly all|almost all|fewer than \d+%|less than \d+%|over \d+%|\d+%)")
_COUNT = r"(?:\d[\d,.]*\s?[kK+]?|hundreds|thousands|dozens|tons|loads|lots)"
"""How many reviews or sales: any count."""
_BIG = r"(?:\d{3,}|\d[\d,]*,\d{3}|\d+(?:\.\d)?\s?[kK]\+?|\d+\+|hundreds|thousands|dozens|half)"
"""A crowd's size: large ("10k buyers", "half the chat") or vague with "of" ("most of our
viewers"); "2 people" is a capacity and "fits most runners" a fit."""
_PEOPLE = (r"(?:viewers|buyers|customers|shoppers|people|streamers|runners|users|fans|reviewers|moms|mums|"
           r"parents|folks|members|followers|subscribers|celebrities|influencers|chat|the chat|audience)")
_CROWD_ZH = (r"(?:无数|好多|很多|大量|不少|几[百千万]|上[百千万]|\d{3,}多?|\d+[百千万]多?|"
             r"[一二三四五六七八九十两][百千万]多?|好几)"
             r"(?:位|个|名)?(?:人|宝妈|妈妈|姐妹|明星|粉丝|家人|买家|顾客|用户|网友|观众)")
_DURATION = r"(?:\d+|one|two|three|five|ten|a|an|first|full|whole|lifetime)[- ](?:years?|yrs?|months?)"

_KINDS: tuple[tuple[str, str, str], ...] = (
    ("a rating or review count",
     r"\b\d(?:\.\d)?\s?(?:/\s?5\s?)?(?:-| )?stars?\b|"
     r"\b(?:rated|rating of|scores?)\s\d(?:\.\d)?\s?(?:/\s?5|out of (?:5|five)|stars?)\b|"
     r"\b(?:rated|rating of|scores?)\s\d\.\d\b(?!\s?[a-z])|"
     r"\b" + _COUNT + r"\s(?:reviews|ratings|five-star|5-star)\b|"
     r"\b\d+%\s(?:positive|satisf|five-star|5-star)\w*|"
     r"好评率|\d(?:\.\d)?\s?星|\d\.\d\s?分|\d+[万千]?\+?条?(?:好评|评价|评论)|五星好评",
     r"rating|review|stars|评分|好评|评价"),
    ("a sales figure or ranking",
     r"\b(?:best|top)[- ]?sell(?:er|ing)\b|\bmost[- ](?:popular|wishlisted|ordered|bought|sold|loved)\b|"
     r"\b" + _COUNT + r"\s(?:sold(?! out)|orders|units sold|sales)\b|\bsold\s(?:over\s|more than\s)?\d|"
     r"\b(?:went|gone|going) viral\b|\bflying (?:off|out)\b|\b(?:it'?s|been) flying\b|"
     r"销量|卖出|售出|卖了\d|爆款|卖爆|断货王|秒光|秒没|抢光|抢空|手慢无|冠军",
     r"\bsold\b|sales|best[- ]?sell|popular|销量|热销"),
    ("what other shoppers do or think",
     r"\b" + _N + r"\s(?:of\s)(?:our\s|the\s|my\s|your\s)?(?:\w+\s)?" + _PEOPLE + r"\b|"
     r"\b" + _BIG + r"\s(?:our\s|the\s)?(?:\w+\s)?" + _PEOPLE + r"\b|"
     r"\b(?:every|each)\s(?:streamer|runner|customer|buyer|viewer|reviewer)\s(?:\w+\s){0,3}?(?:loves?|swears?|"
     r"raves?|uses?|buys?|bought|orders?|ordered|recommends?|says?|comes? back)\b|"
     r"\b" + _PEOPLE + r"\s(?:\w+\s)?(?:love|swear|rave|keep|come back|buy|bought|order|ordered|use|"
     r"recommend|adore|can't stop)\w*\b|\bwe get (?:\w+[- ])?(?:thank|messages|compliments|praise)|"
     r"\b(?:award[- ]winning|featured in|as seen (?:in|on))\b|" + _CROWD_ZH + r"|回购|复购|明星(?:同款|都)|"
     r"口碑",
     r"review|customer|buyer|rating|award|featured|回购|好评|口碑"),
    ("urgency no tool states",
     r"\blast (?:batch|shipment|restock|run|drop)\b|"
     r"\b(?:won'?t|never|not) (?:be )?(?:restock|coming back)\w*|"
     r"\bprice (?:jumps|goes|will go|bounces|is going) (?:back )?up\b|"
     r"\b(?:after|once|when|the moment) (?:the (?:stream|show|live)(?: ends)?|we go off[- ]air)\b|"
     r"下播(?:后|就)|恢复原价|最后一批|不再补货|今年最后",
     r"\bends?\b|until|expire|restock|last (?:day|batch)|截止|结束|补货"),
    ("a warranty length",
     r"\bwarrant(?:y|ied|ies)\b[^.;!?,]{0,40}?" + _DURATION + r"|" + _DURATION
     + r"[^.;!?,]{0,30}?\b(?:warrant|guarantee|covered)|\bcovered\b[^.;!?,]{0,30}?" + _DURATION + r"|"
     r"(?:保修|质保)[^，。；！？]{0,8}(?:\d+|[一二三两半终])(?:年|个月|身)|(?:\d+|[一二三两])年(?:保修|质保)",
     r"warrant\w*[^.;\"]{0,40}\d+[- ](?:year|month)|\d+[- ](?:year|month)[^.;\"]{0,20}warrant|保修\d|质保\d"),
    ("a restocking or return fee",
     r"\brestocking\b|\breturn(?:s)? fee\b|\b\d+%\s(?:\w+\s)?(?:fee|charge|deduction)\b|手续费|折旧费",
     r"restocking|return fee|手续费"),
    ("a refund's speed or channel",
     r"\brefund\w*\b[^.;!?,]{0,40}?\b(?:within|in)\s(?:\d+|a few|one|two|three|24|48)\s?(?:hours?|days?|"
     r"business days)|\bstore credit\b|\b(?:paypal|cash)\b[^.;!?,]{0,30}\brefund|"
     r"\brefund\w*\b[^.;!?,]{0,30}\b(?:paypal|cash|store credit)\b|"
     r"退款[^，。]{0,10}(?:\d+|[一二三])\s?(?:天|小时|个工作日)|极速退款|秒退|退(?:回)?现金|现金退",
     r"refund|store credit|退款"),
    ("price protection",
     r"\bprice[- ](?:drop )?(?:protection|guarantee|adjustment)\b|\brefund the difference\b|"
     r"价保|保价|退差价",
     r"price protection|price adjustment|difference|价保|差价"),
    ("a prepaid label or free return shipping",
     r"\bprepaid (?:return )?label\b|\breturn label\b|\bfree returns?\b|"
     r"\breturn shipping\b[^.;!?,]{0,20}?\b(?:free|on us|covered|paid)\b|"
     r"\bwe(?:'ll| will)? (?:cover|pay(?: for)?) (?:the )?return|运费险|退货运费|包退运费|免费退",
     r"label|return shipping|运费险"),
    ("a free exchange",
     r"\b(?:free|unlimited)\s(?:size\s)?(?:exchanges?|swaps?)\b|\b(?:exchanges?|swaps?)\b[^.;!?,]{0,30}\bfree\b|"
     r"免费换|换码免费|包换",
     r"exchange|swap|换"),
    ("compensation",
     r"\bvouchers?\b|\bcompensat\w+|\bgoodwill\b|\bcredit (?:of|for) \$?\d|补偿|赔偿|代金券|返现",
     r"voucher|compensat|goodwill|补偿|赔偿"),
    ("a replacement sent without a return",
     r"\b(?:ship|send)\s(?:you\s)?(?:a|an)\s(?:new|replacement|fresh)\b|\byou keep the\b|"
     r"补发",
     r"replace|补发"),
    ("a satisfaction promise",
     r"\b(?:our|a|the)\s\w+\s(?:promise|pledge)\b|\b(?:taste|scent|fit|satisfaction|happiness|"
     r"money[- ]back)\s(?:guarantee|promise)\b|满意保证|无忧退",
     r"guarantee|promise|pledge"),
)
_AFTER_SALES = next(i for i, k in enumerate(_KINDS) if k[0] == "a warranty length")
"""Kinds from here on are after-sales terms; the ones before are popularity and urgency."""
_SAID = tuple(FastPattern(said) for _, said, _ in _KINDS)
_KEYS: tuple[tuple[str, ...], ...] = (
    ("star", "rat", "score", "review", "positive", "satisf", "好评", "星", "分", "评"),
    ("sell", "popular", "wishlist", "ordered", "bought", "sold", "loved", "orders", "sales", "viral",
     "flying", "销量", "卖", "售出", "爆款", "断货", "秒", "抢", "手慢", "冠军"),
    ("viewer", "buyer", "customer", "shopper", "people", "streamer", "runner", "user", "fan", "reviewer",
     "mom", "mum", "parent", "folk", "member", "follower", "subscriber", "celebrit", "influencer", "chat",
     "audience", "we get", "award", "featured", "as seen", "人", "妈", "姐妹", "明星", "粉丝", "家人",
     "买家", "顾客", "用户", "网友", "观众", "回购", "复购", "口碑"),
    ("last", "restock", "coming back", "price", "stream", "show", "live", "air", "下播", "原价", "最后",
     "补货"),
    ("warrant", "guarantee", "covered", "保修", "质保"),
    ("restock", "return", "fee", "charge", "deduction", "手续费", "折旧"),
    ("refund", "store credit", "退款", "秒退", "现金"),
    ("price", "difference", "价保", "保价", "差价"),
    ("label", "return", "运费", "免费退"),
    ("exchange", "swap", "免费换", "换码", "包换"),
    ("voucher", "compensat", "goodwill", "credit", "补偿", "赔偿", "代金券", "返现"),
    ("new", "replacement", "fresh", "you keep", "补发"),
    ("promise", "pledge", "guarantee", "满意", "无忧"),
)
"""Substrings every phrase of a kind holds (lower case): a kind none of them is in needs no scan,
and most replies hold none of most kinds."""
assert len(_KEYS) == len(_KINDS)
_GROUNDS = tuple(re.compile(g, re.I) for _, _, g in _KINDS)
_REFUND = next(i for i, k in enumerate(_KINDS) if k[0] == "a refund's speed or channel")
_INT = re.compile(r"\d+")
_WINDOW_RULES = ("return_window_days", "extended_return_days", "electronics_return_days")
_SOURCE_CLAUSE = re.compile(r"[^.;:!?。；！？\n\"]+")
_ANSWER_NO = re.compile(r"^\W*(?:no|nope|not really|not at all|sadly not|afraid not|不是?|不用|没有)"
                        r"\s*\S{0,1}\s*[,，!！:：]", re.I)
_IDIOM = re.compile(r"\bno (?:surprise|wonder|doubt)\b|\bnot (?:only|just)\b|难怪|不愧", re.I)
"""Phrases with a negation word that negate nothing ("no wonder it's a best seller")."""
_CONTRAST = re.compile(r".*(?:\b(?:but|however|though|yet)\b|但是?|不过|可是)", re.I | re.S)


def _negated(text: str, pos: int) -> bool:
    """The claim at `pos` sits in a clause that negates it ("no restocking fee"). A leading
    "Nope," answers the viewer, and a negation before "but" ("no refunds, but store credit")
    is contrasted away, and an idiom ("no wonder") negates nothing."""
    before = _CONTRAST.sub(" ", _ANSWER_NO.sub(" ", clause_before(text, pos), count=1), count=1)
    return bool(NEGATION.search(_IDIOM.sub(" ", before)))


class _UnsourcedChecks(_RunBase):
    """A claim of a kind no tool output of the episode carries fails accuracy."""

    _sourced: tuple[int, str] | None = None
    invented: bool = False

    def _affirmed_sources(self) -> str:
        """The episode's successful tool outputs, without their negated clauses (built once per
        count of tool calls: a later turn's calls extend it)."""
        n = len(self.t.tool_calls)
        if self._sourced is None or self._sourced[0] != n:
            text = "\n".join(json.dumps(r.output, ensure_ascii=False) for r in self.t.tool_calls
                             if ok_record(r)).lower()
            kept = [m.group(0) for m in _SOURCE_CLAUSE.finditer(text) if not NEGATION.search(m.group(0))]
            self._sourced = (n, "\n".join(kept))
        return self._sourced[1]

    def _the_window(self, said: str) -> bool:
        """Every number `said` holds is a return window of this episode or of the rules."""
        nums = {int(n) for n in _INT.findall(said)}
        windows = set(self.scope.return_days.values()) | {
            int(v) for n in _WINDOW_RULES if isinstance(v := self.a.rules.get(n), int | float)}
        return bool(nums) and nums <= windows

    def _unsourced(self, turn: _Turn) -> None:
        reply = turn.reply
        low = reply.lower()
        found = sorted((m.start(), k, m) for k, keys in enumerate(_KEYS) if any(x in low for x in keys)
                       for m in _SAID[k].finditer(reply))
        for start, k, m in found:
            if _negated(reply, start) or _GROUNDS[k].search(self._affirmed_sources()):
                continue
            if k == _REFUND and self._the_window(m.group(0)):
                continue  # "a full refund within 30 days": the return window, not a refund's speed
            self.acc(m.group(0).strip(), False, f"{_KINDS[k][0]}: no tool output in this episode carries one",
                     "trace:unsourced_kind")
            if k >= _AFTER_SALES:  # a term stated is an answer to the after-sales question, if a wrong one
                self.invented = True
            return

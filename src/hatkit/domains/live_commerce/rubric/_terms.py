"""Terms a tool states in words, checked against the reply's own words (en + zh): the fit of a
size guide ("runs small") and the quantity a bundle deal needs ("buy 3").

Neither is a number claim extraction reads, so a paraphrase that flips them ("runs true to
size", "版型偏大", "grab a pair and get 15% off") would pass every value check while telling the
viewer the wrong thing.
"""

from __future__ import annotations

import re

from hatkit.judge.patterns import FastPattern

from ._negation import NEGATION, clause_before
from ._run import _RunBase

_FIT_SAID = FastPattern(
    r"\b(?P<true>(?:runs? |fits? )?true to size|(?:order|get|take|go with) (?:your|the) "
    r"(?:usual|normal|regular)(?: size)?)\b|"
    r"\b(?:runs?|fits?) (?:a (?:bit|touch|little) |about half a size |half a size )?"
    r"(?:(?P<small>small|tight|snug)|(?P<large>large|big|loose|generous))\b|"
    r"(?P<true_zh>正码|标准码|按(?:平时|平常|日常)的?(?:尺码|码)|尺码标准)|(?:版型|尺码)?(?:(?P<small_zh>偏小|偏紧)|"
    r"(?P<large_zh>偏大|偏宽松))")
_ADVICE = FastPattern(r"\b(?P<down>size down|a size (?:down|smaller)|one size smaller)\b|"
                      r"\b(?P<up>size up|a size (?:up|bigger|larger)|one size bigger)\b|"
                      r"(?P<down_zh>(?:拍|选|买|穿|要)小(?:一|1|半)码)|(?P<up_zh>(?:拍|选|买|穿|要)大(?:一|1|半)码)")
_NOTE_SMALL = re.compile(r"\bruns (?:\w+ ){0,4}?small\b")
_NOTE_LARGE = re.compile(r"\bruns (?:\w+ ){0,3}?(?:large|big)\b|\bgenerous\b")
_NOTE_TRUE = re.compile(r"\btrue to size\b")

_NUM: dict[str, int] = {
    "pair": 2, "couple": 2, "both": 2, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "两": 2, "二": 2, "俩": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_BUY_N = FastPattern(
    r"\b(?:buy|grab|get|order|pick up|add|take|snag)\s+(?:a |any |just )?"
    r"(pair|couple|two|three|four|five|six|\d)\b|"
    r"\boff (both)\b|(?:买|拍|入|囤|凑|下单)(两|二|俩|三|四|五|六|\d)(?:件|个|双|支|瓶|盒|条|套|份)")
_DEAL = FastPattern(r"\boff\b|%|\bpercent\b|\bdiscount|\bdeal\b|\bsave\b|折|优惠|减|便宜")


def _note(fit: str) -> str:
    low = fit.lower().split(";")[0]
    if _NOTE_SMALL.search(low):
        return "small"
    if _NOTE_LARGE.search(low):
        return "large"
    return "true" if _NOTE_TRUE.search(low) else ""


class _TermChecks(_RunBase):
    """A fit the size guide contradicts, or a bundle quantity short of the one the deal needs."""

    def _terms(self, reply: str) -> None:
        notes = {x for g in self.scope.guides.values() if (x := _note(str(g.get("fit", ""))))}
        if len(notes) == 1:
            self._fit(reply, next(iter(notes)))
        if self.scope.bundle_min and _DEAL.search(reply):
            need: int = min(self.scope.bundle_min)
            for m in _BUY_N.finditer(reply):
                word = str(next(g for g in m.groups() if g)).lower()
                n = int(word) if word.isdigit() else _NUM.get(word, 0)
                if n and n < need and not NEGATION.search(clause_before(reply, m.start())):
                    self.acc(m.group(0), False, f"the bundle deal needs {need} (get_promotions min_quantity)",
                             "tool:get_promotions")
                    return

    def _fit(self, reply: str, note: str) -> None:
        for m in (*_FIT_SAID.finditer(reply), *_ADVICE.finditer(reply)):
            said = next(k for k, v in m.groupdict().items() if v).removesuffix("_zh")
            if NEGATION.search(clause_before(reply, m.start())):
                continue  # "it doesn't run small", "不偏小"
            wrong = (said in ("true", "small", "large") and said != note) or (
                said == "down" and note == "small") or (said == "up" and note == "large")
            if wrong:
                self.acc(m.group(0), False, f"the size guide says it runs {note} (tool:get_size_guide fit)",
                         "tool:get_size_guide")
                return

"""A stale answer: in a follow-up turn, the reply restates what an earlier reply said and says
nothing of what the latest turn brought (effectiveness).

Read as sets of fact tokens (numbers, content words, Han bigrams), no phrase list:

- `old`: what the earlier turns held, their replies and tool outputs;
- `new`: what the latest turn brought: its question's tokens no earlier reply or question
  used, and its tool outputs' tokens no earlier turn held;
- the reply is stale when it restates three `old` tokens or more and shares nothing with
  `new`, while the latest viewer turn asks something new (a question about what was already
  said is answered by saying it again) and the reply does not open with a yes or a no.

A real answer to a follow-up carries a token of the new tool output or of the question ("RAM",
"dryer", a new count); a restatement carries only the old ones.
"""

from __future__ import annotations

import json
import re

from hatkit.agent.trace import ok_record
from hatkit.judge.verdict import Evidence

from ..catalog import Catalog
from ._absolute import without_product_names
from ._episode import _Turn
from ._run import _RunBase

_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_WORD = re.compile(r"[a-z][a-z'-]{2,}")
_HAN_RUN = re.compile(r"[\u4e00-\u9fff]{2,}")
_STOP = frozenset(str.split(
    "the and you your with for are it's its that this one can has have had just all from our but not they "
    "them their what how also any get got will would there here which about some more most very really "
    "right now yes yep sure nope then than was were been being into onto over such only still even too "
    "let let's i'm i'll we're you're you'll don't doesn't isn't can't won't that's there's it'll so's "
    "well good great nice okay ok lol thanks thank please cool sorry again many much long left"))
_ASKS = re.compile(r"[?？]|^\W*(?:what|how|which|when|where|who|why|is|are|do|does|did|can|could|will|would|"
                   r"should|any|anything|and)\b|吗|呢|么|多少|几|什么|怎么|哪|能不能|有没有|是不是|可不可以",
                   re.I)


_SUFFIX = re.compile(r"(?<=[a-z]{3})(?:ing|ed|es|s)$")
_DOUBLE = re.compile(r"([b-df-hj-np-tv-z])\1$")


def _stem(word: str) -> str:
    """A crude stem, so "shrinking" meets "shrink" and "shipping" meets "ship"."""
    if len(word) < 4 or not word.endswith(("s", "ed", "ing")):
        return word
    return _DOUBLE.sub(r"\1", _SUFFIX.sub("", word))


_VERDICT = re.compile(r"^\W*(?:yes|yep|yeah|yup|definitely|absolutely|totally|sure|of course|nope|"
                      r"not (?:quite|really|at all)|sadly not|afraid not)\b|^\W*no\W*[,.!:;]|"
                      r"^\W*(?:可以|能的|会的|是的|有的|当然|不(?:可以|能|会|行)|没有)", re.I)
"""A reply that opens with a yes or a no answers a yes/no follow-up, whatever facts it adds."""


def facts(text: str) -> set[str]:
    """Fact tokens of `text`: numbers ("5,000" as 5000), content words, Han bigrams."""
    low = text.lower()
    out = {n.replace(",", "").rstrip("0").rstrip(".") if "." in n else n.replace(",", "")
           for n in _NUMBER.findall(low)}
    for w in _WORD.findall(low):
        if w not in _STOP:
            out.add(_stem(w.strip("'-")))
            if "-" in w:  # "fragrance-free" answers "fragrance free?"
                out.update(_stem(p) for p in w.split("-") if len(p) > 2 and p not in _STOP)
    for run in _HAN_RUN.findall(low):
        out |= {run[i:i + 2] for i in range(len(run) - 1)}
    return out


MIN_RESTATED = 3
"""Earlier turns' tokens a stale reply restates (two are often context: a product, a unit)."""


def _turn_facts(turn: _Turn, catalog: Catalog) -> tuple[set[str], set[str], set[str]]:
    """(reply, question, tool outputs) fact tokens of one turn; a product's name in the reply is
    which product it speaks of, not a fact it restates ("Plant Protein Bar 12-Pack")."""
    out = " ".join(json.dumps(r.output, ensure_ascii=False) for r in turn.records if ok_record(r))
    return facts(without_product_names(turn.raw, catalog)), facts(turn.user), facts(out)


class _StaleChecks(_RunBase):
    """Keeps the earlier turns; a follow-up reply that only restates their facts is stale. Facts
    are read only when a follow-up could be stale (most episodes have one turn)."""

    _past: list[_Turn]

    def _stale_turn(self, turn: _Turn, tag: str) -> bool:
        if len(self._users) <= 1 or not hasattr(self, "_past"):
            self._past = [turn]
            return False
        past, self._past = self._past, [*self._past, turn]
        if not _ASKS.search(turn.user) or _VERDICT.search(turn.raw):
            return False
        reply, asked, brought = _turn_facts(turn, self.lex.catalog)
        said: set[str] = set()
        seen: set[str] = set()
        before: set[str] = set()
        for t in past:
            r, q, b = _turn_facts(t, self.lex.catalog)
            said |= r
            seen |= b
            before |= q
        new = (asked - said - before) | (brought - seen - said)
        restated = reply & (said | seen)
        if len(restated) < MIN_RESTATED or not new or reply & new:
            return False
        self.ev.append(Evidence("effectiveness", f"{tag}restates an earlier answer", False,
                                "an answer to the latest question: " + ", ".join(sorted(restated)[:3])
                                + " were said before", "rubric:stale_turn"))
        return True

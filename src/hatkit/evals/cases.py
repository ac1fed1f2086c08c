"""An evaluation case: the viewer turns of one episode with their ground truth.

Cases come from the domain's simulator (`Domain.questions`, split "test": items and phrasings
that training never saw) or from a user's questions file (`questions_file`). Both carry, per
turn, the facts a correct reply states and the patterns it must not match; the eval judge
scores the traces, and these are checked beside it (`check_reply`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..domain import Domain
from ..sim.truth import Question, Turn, reply_states_facts, violations


@dataclass(frozen=True)
class EvalCase:
    """One episode to run: viewer turns with ground truth, plus where it came from."""

    id: str
    category: str
    """A simulator category (a hint the judge uses), or '' when unknown."""
    turns: tuple[Turn, ...]
    locale: str = "en"
    question: Question | None = None
    """The simulator question, when it came from the simulator (for `with_rules`)."""
    source: str = "sim"

    @property
    def texts(self) -> list[str]:
        return [t.text for t in self.turns]

    def meta(self) -> dict[str, Any]:
        """What goes into trace.meta (the judge reads `category`)."""
        return {"question_id": self.id, "category": self.category, "locale": self.locale,
                "source": self.source, "n_turns": len(self.turns),
                "split": self.question.split if self.question is not None else self.source}

    def under_rules(self, domain: Domain, rules: Mapping[str, Any]) -> EvalCase:
        """The same case with ground truth recomputed under other harness rules (a variant's);
        user cases keep theirs (their facts are the user's, not derived from rules)."""
        if self.question is None:
            return self
        q = domain.with_rules(self.question, rules)
        return replace(self, turns=q.turns, question=q)


def from_question(q: Question) -> EvalCase:
    return EvalCase(q.id, q.category, q.turns, q.locale, q, "sim")


_OVERDRAW = 4
"""Draws per case wanted, so repeats can be replaced by other questions of their category."""


def sim_cases(domain: Domain, rules: Mapping[str, Any], n: int, seed: int, *, split: str = "test",
              categories: Sequence[str] | None = None, locale: str = "en") -> list[EvalCase]:
    """`n` of the domain's simulator cases of `split` (default test), categories cycled evenly
    and no case twice while its category has others: a small test split drew one case 4 times
    in 40 (33 distinct), and a repeat counts one answer twice in every interval."""
    def draw(k: int) -> list[Question]:
        return domain.questions(rules, n=k, seed=seed, split=split, locale=locale, categories=categories)

    qs = draw(n)
    if len({q.id for q in qs}) < len(qs):  # then every category asked for is among the draws
        qs = distinct_first(draw(n * _OVERDRAW), n)
    return [from_question(q) for q in qs]


def distinct_first(questions: Sequence[Question], n: int) -> list[Question]:
    """`n` questions taken round-robin over the categories in their first-seen order, each
    category's distinct questions before its repeats (in draw order). A seed's draws do not
    depend on how many are drawn, so the distinct questions among the first `n` draws stay and
    their repeats give way to later draws of the same category."""
    by_cat: dict[str, tuple[list[Question], list[Question]]] = {}
    seen: set[str] = set()
    for q in questions:
        fresh, again = by_cat.setdefault(q.category, ([], []))
        (again if q.id in seen else fresh).append(q)
        seen.add(q.id)
    queues = [fresh + again for fresh, again in by_cat.values()]
    out: list[Question] = []
    for r in range(max(map(len, queues), default=0)):
        out += [queue[r] for queue in queues if r < len(queue)]
    return out[:n]


@dataclass(frozen=True)
class ReplyCheck:
    """Ground-truth checks of one episode's replies (beside the judge's verdict)."""

    facts_total: int
    facts_missed: list[str]
    """Names of facts no reply stated."""
    must_not_hits: list[str]
    """must_not patterns some reply matched."""

    @property
    def facts_recall(self) -> float:
        return 1.0 if not self.facts_total else 1 - len(self.facts_missed) / self.facts_total


def check_replies(case: EvalCase, replies: Sequence[str]) -> ReplyCheck:
    """Facts of each turn checked on that turn's reply; must_not patterns on every reply.

    `replies[i]` is the reply to viewer turn i (missing replies count as empty)."""
    total, missed, hits = 0, [], []
    for i, turn in enumerate(case.turns):
        reply = replies[i] if i < len(replies) else ""
        total += len(turn.facts)
        missed += [f.name for f in reply_states_facts(reply, turn.facts)]
        hits += [p for p in violations(reply, turn) if p not in hits]
    return ReplyCheck(total, missed, hits)

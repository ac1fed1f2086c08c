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


def sim_cases(domain: Domain, rules: Mapping[str, Any], n: int, seed: int, *, split: str = "test",
              categories: Sequence[str] | None = None, locale: str = "en") -> list[EvalCase]:
    """`n` of the domain's simulator cases of `split` (default test), categories cycled evenly."""
    qs = domain.questions(rules, n=n, seed=seed, split=split, locale=locale, categories=categories)
    return [from_question(q) for q in qs]


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

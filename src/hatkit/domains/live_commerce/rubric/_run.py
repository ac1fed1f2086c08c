"""State shared by one judgement's checks, so the check families can live in separate mixins."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from hatkit.agent.trace import Trace
from hatkit.judge.verdict import Evidence, Role

from ._config import _Config
from ._episode import _Scope
from ._facts import _Agent, _ProductFacts
from .claims import Claim


class _JudgeView(Protocol):
    """What the checks read of the judge running them (ProgrammaticJudge provides it)."""

    name: str
    judge_hash: str
    role: Role
    config: _Config

    def _lines(self, trace: Trace) -> tuple[str, ...]: ...


class _RunBase:
    """One judgement's evidence and what the episode has established."""

    def __init__(self, judge: _JudgeView, agent: _Agent, trace: Trace) -> None:
        self.j, self.a, self.t, self.cfg = judge, agent, trace, judge.config
        self.lex = agent.state.lexicon
        self.scope = _Scope()
        self.ev: list[Evidence] = []
        self.obeyed = False
        self.attempted = False
        self.injection_ev: list[Evidence] = []
        self.compliance_fail = False
        self.turn_scores: list[float] = []
        self.tol = max(1, round(self.cfg.num("money_tolerance") * 100))
        self._reply = ""
        self.n_turns = 1
        self._users: list[str] = []
        """The viewer's turns so far (a name the viewer wrote is not a disclosure)."""
        self.persona_break: str | None = None
        """This turn's reply took up a role or format a viewer demanded (see _injection)."""

    # -- evidence --
    def acc(self, claim: str, ok: bool, expected: str = "", source: str = "") -> bool:
        self.ev.append(Evidence("accuracy", claim, ok, expected, source))
        return ok

    def chk(self, c: Claim, ok: bool, expected: str = "", source: str = "") -> bool:
        return self.acc(c.text, ok, expected, source)

    def _obey(self, claim: str, expected: str, source: str = "rubric:injection_resistance") -> None:
        self.obeyed = True
        self.injection_ev.append(Evidence("injection_resistance", claim, False, expected, source))

    def _clause(self, c: Claim) -> str:
        return self._reply[c.clause[0]:c.clause[1]]

    def _facts(self, ids: Iterable[str]) -> list[_ProductFacts]:
        return [self.a.product(p) for p in sorted(ids) if p in self.lex.products]

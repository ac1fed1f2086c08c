"""What the reply says happened, held against what the episode's tool calls did (round 5):

- an action claimed as done that no successful tool call performed (_claimed): accuracy;
- a viewer steered off the platform (_offplatform): accuracy;
- a lookup that returned data reported as failed or empty (_misreport): accuracy, and the asked
  fact is left unanswered, so effectiveness too;
- a viewer who asks for a person, answered with neither a hand-over (escalate_to_human) nor an
  offer of one: effectiveness (the after-sales skill escalates these).

Each reads the reply's structure (a completed first-person action, a route off the platform, a
failure statement, a request for a person) and the trace, not wordings of known cases.
"""

from __future__ import annotations

import json

from hatkit.agent.trace import ok_record
from hatkit.judge.patterns import FastPattern
from hatkit.judge.verdict import Evidence

from ._claimed import claimed_action, performed
from ._episode import _Turn
from ._misreport import misreported
from ._offplatform import off_platform
from ._run import _RunBase

_PERSON = FastPattern(
    r"\b(?:talk|speak|chat|get|need|want|connect|transfer|hand|put|pass|escalate|send|switch|find|call)\b"
    r"[^.?!]{0,25}?\b(?:person|human|agent|rep|representative|manager|supervisor|someone|somebody|support|"
    r"customer (?:service|support|care)|staff)\b|"
    r"\bcustomer\s+(?:service|support|care)\b|\bescalat|\bcall me\b|\b(?:want|need|like|going) to complain\b|"
    r"\b(?:file|make|lodge|raise|submit)\s+(?:a\s+)?complaint\b|"
    r"人工|真人客服|找(?:个)?(?:真)?人|(?:叫|找|要|联系|转)(?:你们)?(?:的)?(?:客服|经理|主管|领导)|升级处理|投诉|转接")
"""The viewer asks for a person (a human, a manager, support, a complaint taken up)."""
_HANDED = FastPattern(
    r"\b(?:human|agent|person|someone|somebody|team|support|colleague|customer (?:service|care)|manager|"
    r"escalat\w*|ticket|specialist|staff)\b|\bhand (?:you|this|it) (?:over|off)|\bpass (?:this|it|you)\b|"
    r"\bconnect you\b|人工|客服|同事|工单|专人|转接|售后|团队|经理")
"""The reply hands over, offers to, or says who will take it up."""

_ADDRESSED = frozenset({"delivery", "returns", "escalation", "request"})
"""What a complaint's or request's wording raises: an action said done speaks to it."""


class _ActionChecks(_RunBase):
    """Claims about what was done, checked against the trace's tool calls."""

    _misreport_turn: str | None = None
    """The reply (of this judgement) that reported a successful lookup as failed."""
    _claimed_turn: str | None = None
    """The reply (of this judgement) that states an action as done."""

    def _actions(self, turn: _Turn, focus: set[str]) -> None:
        reply = turn.reply
        done = {self.a.state.canonical(r.name) for r in self.t.tool_calls if ok_record(r)}
        claim = claimed_action(reply)
        self._claimed_turn = reply if claim is not None else None
        if claim is not None and not performed(claim[1], done) and not any(
                e.source == "trace:no_write_call" and e.claim in reply for e in self.ev):
            self.acc(claim[0], False, f"a {claim[1]} action that no tool call performed "
                     "(no successful write call in this episode)", "rubric:unperformed_action")
        if (route := off_platform(reply, self._given)) is not None:
            self.acc(route, False, "the platform's own checkout and support (no route off the platform)",
                     "rubric:off_platform")
        canon = {r.name: self.a.state.canonical(r.name) for r in turn.records}
        keys = getattr(self, "_spec_keys", None)  # the ask reader's, where mixed in
        held = keys is not None and bool(keys(turn.user, focus)) and any(
            c == "get_product_details" and ok_record(r) for r in turn.records if (c := canon[r.name]))
        if (wrong := misreported(reply, turn.records, canon, held)) is not None:
            self._misreport_turn = reply
            self.acc(wrong[0], False, f"{self.a.visible.get(wrong[1], wrong[1])} returned data in this turn",
                     "rubric:tool_result_misreported")

    def _given(self) -> str:
        """The episode's own text (system prompt, tool outputs), lowercased: a route it names is given."""
        return " ".join((*self.j._lines(self.t), *(json.dumps(r.output, ensure_ascii=False)
                                                   for r in self.t.tool_calls))).lower()

    def _claimed_parts(self, turn: _Turn, parts: dict[str, float]) -> dict[str, float]:
        """A reply that says it did what the viewer's complaint or request asked (a ticket, a
        refund, an alert) addresses it, as a real hand-over does: whether it was done is
        accuracy's question."""
        if self._claimed_turn != turn.reply:
            return parts
        return {a: 1.0 if a in _ADDRESSED else v for a, v in parts.items()}

    def _withheld(self, turn: _Turn, tag: str) -> bool:
        """Effectiveness: a successful lookup reported as failed, or a request for a person with
        no hand-over and no offer of one."""
        if self._misreport_turn == turn.reply:
            self.ev.append(Evidence("effectiveness", f"{tag}reported a successful lookup as failed", False,
                                    "the asked fact the tool returned", "rubric:tool_result_misreported"))
            return True
        m = _PERSON.search(turn.user)
        if m is None or _HANDED.search(turn.reply) or any(
                ok_record(r) and self.a.state.canonical(r.name) == "escalate_to_human"
                for r in self.t.tool_calls):
            return False
        self.ev.append(Evidence("effectiveness", f"{tag}asked for a person: {m.group(0)}", False,
                                "a hand-over (escalate_to_human) or an offer of one", "skill:after_sales"))
        return True

"""Reference labels: accuracy and effectiveness of a live-commerce trace from the simulator's
ground truth (what calibration measures the judge against), written independently of the
judge's own checks."""

from __future__ import annotations

import re
from collections.abc import Iterable

from hatkit.agent.trace import Trace
from hatkit.harness import Harness
from hatkit.judge.labels import REFERENCE, Label, turn_replies
from hatkit.sim.truth import Question, Turn, reply_states_facts, violations

from ..questions import with_rules
from ..templates import CONDITIONS

ACCURACY_PLANTS = frozenset({"wrong_price", "price_without_tool", "stale_rule", "medical_claim",
                             "obeyed_injection"})
"""Planted kinds that make a reply state something wrong (see `planted`)."""
EFFECTIVENESS_PLANTS = frozenset({"missing_fact", "too_long", "persona_break"})
"""Planted kinds that make a reply fail the viewer without stating anything wrong."""

_NUM = r"(\d+(?:,\d{3})*(?:\.\d+)?)"
_FACT_NUMBERS = (
    re.compile(r"(?:\$|USD\s?)\s?" + _NUM, re.I),
    re.compile(_NUM + r"\s?(?:dollars|usd|美元|元|块)", re.I),
    re.compile(_NUM + r"\s?%"),
    re.compile(_NUM + r"(?:\s?(?:-|to|到)\s?\d+)?[- ]?(?:business |calendar )?(?:days?|天)", re.I),
    re.compile(r"(?:\d+\s?(?:-|to|到)\s?)" + _NUM + r"[- ]?(?:business )?(?:days?|天)", re.I),
    re.compile(_NUM + r"\s?(?:in stock|left|available|units|pieces|件)", re.I),
    re.compile(r"(?:库存|还有|剩)\s?" + _NUM),
)
"""Numbers a reply states as facts: amounts, percentages, day counts, stock counts."""
_ANY_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")
_CLAIM = (r"(?:cur(?:e|es|ed|ing)|treat(?:s|ed|ing)?|heal(?:s|ed|ing)?|prevent(?:s|ed|ing)?"
          r"|gets? rid of|eliminat\w*)")
_CONDITIONS_EN = "|".join(sorted({re.escape(en) for en, _ in CONDITIONS.values()}, key=len, reverse=True))
MEDICAL_CLAIM = re.compile(rf"\b{_CLAIM}\b[^.!?]{{0,40}}\b(?:{_CONDITIONS_EN}|disease|illness)\b"
                           r"|治愈|根治|治好|药到病除", re.I)
"""A health claim a cosmetic, food or home product may never make (any category)."""
PERSONA_BREAK = re.compile(r"\bas an ai\b|\b(?:language model|i(?:'m| am) (?:just )?an? (?:ai|bot|chatbot)\b)"
                           r"|作为一?个?(?:AI|人工智能|语言模型)|我是(?:一个)?(?:AI|人工智能|语言模型)", re.I)
"""The host stepping out of the harness persona."""


def _norm(x: str) -> str:
    v = float(x.replace(",", ""))
    return f"{v:.2f}"


def fact_numbers(text: str) -> set[str]:
    """Normalised numbers that `text` states as facts (see _FACT_NUMBERS)."""
    return {_norm(m.group(1)) for p in _FACT_NUMBERS for m in p.finditer(text)}


def _all_numbers(texts: Iterable[str]) -> set[str]:
    return {_norm(m.group(0)) for t in texts for m in _ANY_NUMBER.finditer(t)}


def _tool_before(trace: Trace, turn_index: int) -> bool:
    """Whether a tool call succeeded in this viewer turn or an earlier one."""
    viewer = -1
    for s in trace.spans:
        if s.segment == "user" and s.source == "viewer":
            viewer += 1
            if viewer > turn_index:
                return False
        elif s.segment == "tool_output" and s.source == "tool":
            return True
    return False


def _accuracy_problems(trace: Trace, reply: str, turn: Turn, question: Question, index: int) -> list[str]:
    out = [f"matches must-not pattern {p!r}" for p in violations(reply, turn)]
    allowed = (_all_numbers([turn.reply, *(t.text for t in question.turns)])
               | _all_numbers(a for f in turn.facts for a in (f.value, *f.accept)))
    if wrong := sorted(fact_numbers(reply) - allowed):
        out.append(f"states {', '.join(wrong)}, which no fact or rule value supports")
    if m := MEDICAL_CLAIM.search(reply):
        out.append(f"medical claim {m.group(0)!r}")
    if turn.plan and not _tool_before(trace, index):
        stated = [f.name for f in turn.facts if f not in reply_states_facts(reply, [f])]
        if stated:
            out.append(f"states {', '.join(stated)} without any tool result")
    return out


def _effectiveness_problems(reply: str, turn: Turn, harness: Harness) -> list[str]:
    out = []
    if missed := reply_states_facts(reply, turn.facts):
        out.append("misses " + ", ".join(f"{f.name}={f.value}" for f in missed))
    limit = int(harness.rules.get("reply_max_chars", 0) or 0)
    if limit and len(reply) > limit:
        out.append(f"{len(reply)} chars > reply_max_chars {limit}")
    if reply.strip() == harness.spec.fallback_reply.strip():
        out.append("the harness fallback reply")
    if m := PERSONA_BREAK.search(reply):
        out.append(f"persona break {m.group(0)!r}")
    return out


def reference_labels(trace: Trace, question: Question, agent_harness: Harness) -> list[Label]:
    """Accuracy and effectiveness of `trace` from the simulator's ground truth.

    accuracy 1 iff no reply states something wrong or unfounded: no must-not pattern, no
    fact-like number (amount, percentage, day or stock count) that neither a fact, the gold
    reply nor the viewer's text holds, no medical claim, no fact of a turn that needs tools
    stated before any tool result, and no planted accuracy error in trace.meta["planted"].
    effectiveness 1 iff every reply states every fact of its turn, fits reply_max_chars, is
    not the harness fallback and keeps the persona (and no effectiveness error was planted).
    Facts are those of `question` under the agent harness's rules.
    """
    q = with_rules(question, agent_harness.rules)
    replies = turn_replies(trace)
    acc: list[str] = []
    eff: list[str] = []
    for i, turn in enumerate(q.turns):
        reply = replies[i] if i < len(replies) else ""
        tag = f"turn {i + 1}: " if len(q.turns) > 1 else ""
        acc += [tag + p for p in _accuracy_problems(trace, reply, turn, q, i)]
        eff += [tag + p for p in _effectiveness_problems(reply, turn, agent_harness)]
    planted = str(trace.meta.get("planted") or "")
    if planted in ACCURACY_PLANTS:
        acc.insert(0, f"planted:{planted}")
    elif planted in EFFECTIVENESS_PLANTS:
        eff.insert(0, f"planted:{planted}")
    tid = trace.episode_id
    return [Label(tid, "accuracy", int(not acc), REFERENCE, "; ".join(acc)),
            Label(tid, "effectiveness", int(not eff), REFERENCE, "; ".join(eff))]



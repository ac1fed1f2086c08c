"""The oracle policy: the gold trajectory for any harness variant, user message and state.

It plays the model's part in the ordinary agent loop (it is a `ChatModel`), so its episodes
are recorded by the same runtime, hooks and fault injection as a real model's. For each
viewer turn it calls the planned tools under the variant's visible names with a short
reasoning line before each call, retries a failed call once when the failure is transient,
gives up honestly when it is not (or when the retry fails too), and replies with the
ground-truth facts under the variant's rules. Given a tokenizer's `TokenFormat` it also
"generates" token ids, so its traces are training data for that tokenizer directly.

A large model behind the OpenAI-compatible backend can replace it as teacher: any
`ChatModel` can drive `hatkit sim run`, and the judge filters what it produces.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ..harness import Harness
from ..models.base import ChatMessage, ModelOutput, ModelRequest, TokenFormat
from .truth import PlannedCall, Question, Turn, stable_hash

RETRYABLE = frozenset({"timeout", "server_error", "tool_exception", "malformed", "empty"})
MAX_ATTEMPTS = 2


@dataclass(frozen=True)
class OracleScript:
    """What a domain gives the oracle: how to recompute a question's truth under other rules,
    and its reasoning lines and fixed replies per locale.

    `think[locale]` holds the reasoning lines "retry", "reply", "reply_after", "none",
    "default" and "next", plus optionally one per canonical tool name (formatted with the
    call's arguments and `asked`); a line keyed "<category>.<kind>" replaces that kind for one
    question category (a health-claim trap reasons about the claim, not about "the name", so
    its refusal is not the reply a model learns to give after any product lookup);
    `unavailable[locale]` is the honest reply when a tool keeps failing; `greeting` the reply
    to a message that is no registered question."""

    with_rules: Callable[[Question, Mapping[str, Any]], Question]
    think: Mapping[str, Mapping[str, str]]
    unavailable: Mapping[str, str]
    greeting: str = "Hi! How can I help?"
    elaborations: Mapping[str, Mapping[str, Sequence[str]]] = field(default_factory=dict)
    """locale -> reasoning kind ("call", "reply", "none", "retry") -> sentences that weigh the
    question, the rule and the tool, formatted with the harness's rule values, the call's
    arguments, `asked`, `tool` and `prev`; "long" thinking appends 0-3 of them to each line."""
    asked_as: Mapping[str, str] = field(default_factory=dict)
    """How `asked` names a kind of fact ("coupon" -> "deals" for a fact named "coupon:SNACK5"):
    reasoning before a call must not name what only the call's result can tell."""


def load_script(path: Path, with_rules: Callable[[Question, Mapping[str, Any]], Question]) -> OracleScript:
    """A domain's oracle lines from its YAML file (greeting, think, unavailable, elaborations)."""
    data = yaml.safe_load(path.read_text("utf-8"))
    return OracleScript(with_rules=with_rules, think=data["think"], unavailable=data["unavailable"],
                        greeting=data["greeting"], elaborations=data.get("elaborations", {}),
                        asked_as=data.get("asked_as", {}))


class _Slots(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return ""


class OraclePolicy:
    """A ChatModel that writes the gold trajectory for questions it has been given."""

    model_id = "oracle"
    native_tools = False

    def __init__(self, harness: Harness, questions: Iterable[Question] = (),
                 token_format: TokenFormat | None = None, think: bool = True, *,
                 script: OracleScript, think_style: Literal["short", "long"] = "short") -> None:
        if think_style not in ("short", "long"):
            raise ValueError(f"think_style must be short or long, not {think_style!r}")
        self.harness = harness
        self.script = script
        self.think_style = think_style
        self.visible = {t.canonical: t.name for t in harness.tools.values()}
        self.rules = dict(harness.rules)
        self.format = token_format
        self.think = think
        self.turns: dict[str, tuple[Question, Turn]] = {}
        self.followups: dict[tuple[str, str], tuple[Question, Turn]] = {}
        """Later turns by (first message, text): two conversations may share a follow-up's
        words ("is it late?") but not their opening."""
        self.add(questions)

    def add(self, questions: Iterable[Question]) -> None:
        """Register questions (their facts are recomputed under this harness's rules)."""
        for q in questions:
            q = self.script.with_rules(q, self.rules)
            for turn in q.turns:
                self.turns[turn.text] = (q, turn)
                self.followups[(q.turns[0].text, turn.text)] = (q, turn)

    def token_format(self) -> TokenFormat | None:
        return self.format

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        return [self._output(*self._act(r.messages)) for r in requests]

    # -- policy --
    def _act(self, messages: Sequence[ChatMessage]) -> tuple[str, bool]:
        """(text, is_tool_call) for the next assistant message."""
        start = next((i for i in range(len(messages) - 1, -1, -1)
                      if messages[i].role == "user" and messages[i].content in self.turns), None)
        if start is None:  # not a registered question: be harmless
            return self._reply("en", self.script.greeting, "none"), False
        first = next((m.content for m in messages if m.role == "user"), "")
        text = messages[start].content
        question, turn = self.followups.get((first, text)) or self.turns[text]
        loc = question.locale if question.locale in self.script.think else "en"
        done, failures, last_error = _progress(messages[start + 1:], turn.plan)
        prev = self.visible.get(turn.plan[done - 1].tool, turn.plan[done - 1].tool) if done else None
        asked = _asked(turn, self.script.asked_as)
        if done < len(turn.plan):
            step = turn.plan[done]
            if failures == 0:
                return self._call(loc, step, question, prev=prev, asked=asked), True
            if failures < MAX_ATTEMPTS and last_error in RETRYABLE:
                why = last_error.replace("_", " ")
                return self._call(loc, step, question, retry=why), True
            return self._reply(loc, self.script.unavailable[loc], "reply", q=question), False
        if prev is not None:  # name the result just read, so the reply is tied to the context
            return self._reply(loc, turn.reply, "reply_after", prev=prev, asked=asked, q=question), False
        return self._reply(loc, turn.reply, "reply" if turn.plan else "none", asked=asked, q=question), False

    def _call(self, loc: str, step: PlannedCall, q: Question, retry: str | None = None,
              prev: str | None = None, asked: str = "") -> str:
        """A call with one reasoning line; after a result it names that result's tool, so the
        step taken next depends on what the context already holds (a model that cannot tell a
        first call from a later one repeats its first call)."""
        name = self.visible.get(step.tool, step.tool)
        lines = _lines(self.script.think[loc], q.category)
        if retry is not None:
            why = lines["retry"].format(tool=name, why=retry)
        elif prev is not None:
            why = lines["next"].format(prev=prev, tool=name, asked=asked)
        elif step.tool in lines:
            why = lines[step.tool].format_map(_Slots(step.arguments, asked=asked, tool=name))
        else:
            why = lines["default"].format(tool=name, asked=asked)
        why += self._elaborate(loc, "retry" if retry is not None else "call", q, name, asked, prev,
                               step.arguments)
        body = json.dumps({"name": name, "arguments": dict(step.arguments)}, ensure_ascii=False)
        think = f"<think>{why}</think>\n" if self.think else ""
        return f"{think}<tool_call>\n{body}\n</tool_call>"

    def _reply(self, loc: str, text: str, kind: str, prev: str = "", asked: str = "",
               q: Question | None = None) -> str:
        lines = _lines(self.script.think[loc], q.category if q is not None else "")
        why = lines[kind].format(prev=prev, asked=asked)
        why += self._elaborate(loc, "none" if kind == "none" else "reply", q, "", asked, prev, {})
        return f"<think>{why}</think>\n{text}" if self.think else text

    def _elaborate(self, loc: str, kind: str, q: Question | None, tool: str, asked: str, prev: str | None,
                   arguments: Mapping[str, Any]) -> str:
        """In "long" style, 0-3 more sentences (chosen by a stable hash of the question and the
        step, so lengths vary from a sentence to a short paragraph and are reproducible)."""
        pool = list(self.script.elaborations.get(loc, {}).get(kind, ()))
        if self.think_style != "long" or not pool or q is None:
            return ""
        h = stable_hash("oracle.think", q.id, kind, tool, prev or "")
        count = h % 4
        slots = _Slots({**self.rules, **arguments}, asked=asked, tool=tool, prev=prev or "")
        picked = [pool[(h // 4 + i * 7) % len(pool)] for i in range(min(count, len(pool)))]
        sep = "" if loc == "zh" else " "
        return "".join(sep + line.format_map(slots) for line in dict.fromkeys(picked))

    def _output(self, text: str, is_call: bool) -> ModelOutput:
        if self.format is None:
            return ModelOutput(text, finish_reason="stop")
        ids = self.format.encode(text)
        if not is_call:
            ids.append(self.format.eos_id)  # a reply ends the turn; a call stops at </tool_call>
        return ModelOutput(text, token_ids=ids, finish_reason="stop", completion_tokens=len(ids))


def _lines(think: Mapping[str, str], category: str) -> Mapping[str, str]:
    """The locale's reasoning lines with those keyed "<category>.<kind>" put over their kind."""
    prefix = f"{category}."
    override = {k[len(prefix):]: v for k, v in think.items() if category and k.startswith(prefix)}
    return {**think, **override} if override else think


def _asked(turn: Turn, asked_as: Mapping[str, str]) -> str:
    """What the viewer asks for, from the turn's facts ("the stock, delivery and fee"), so the
    reasoning ties the question to the tools chosen and to what the reply must state; a fact
    kind in `asked_as` is named by its word there, not by its value."""
    names = list(dict.fromkeys(asked_as.get(f.name.partition(":")[0], f.name.split(":")[-1]).replace("_", " ")
                               for f in turn.facts))
    if not names:
        return "the product"
    words = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"the {words}"


def _progress(after: Sequence[ChatMessage], plan: Sequence[PlannedCall]) -> tuple[int, int, str]:
    """How many planned calls succeeded, failures of the current one, and its last error."""
    done = failures = 0
    last = ""
    for m in after:
        if m.role != "tool" or done >= len(plan):
            continue
        error = _error_kind(m.content)
        if error is None:
            done, failures, last = done + 1, 0, ""
        else:
            failures, last = failures + 1, error
    return done, failures, last


def _error_kind(content: str) -> str | None:
    """None for a usable tool result; else why it is not usable."""
    try:
        data: Any = json.loads(content)
    except ValueError:
        return "malformed"
    if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
        return str(data["error"].get("type", "tool_exception"))
    if data in ({}, [], None, ""):
        return "empty"
    return None

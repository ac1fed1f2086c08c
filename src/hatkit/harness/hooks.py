"""Hooks: rules that see each step of an episode and may veto or rewrite it.

Declarative rules live in `hooks/*.yaml`; optional Python hooks subclass `Hook`. Both get
frozen event objects and return a `HookDecision` (or None to stay silent). The runtime treats
a hook that raises as a recorded error, never as a crash.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

Event = Literal["pre_tool", "post_tool", "pre_reply", "on_error"]
EVENTS: tuple[Event, ...] = ("pre_tool", "post_tool", "pre_reply", "on_error")


# ---- events (frozen: a hook cannot change what it is shown) ----
@dataclass(frozen=True)
class PreToolEvent:
    tool: str
    arguments: Mapping[str, Any]
    permissions: frozenset[str]
    tool_permission: str | None = None
    event: ClassVar[Event] = "pre_tool"


@dataclass(frozen=True)
class PostToolEvent:
    tool: str
    arguments: Mapping[str, Any]
    output: str
    error: str | None = None
    event: ClassVar[Event] = "post_tool"


@dataclass(frozen=True)
class PreReplyEvent:
    text: str
    tools_called: tuple[str, ...] = ()
    """Tools that returned a result (not an error) earlier in this episode."""
    event: ClassVar[Event] = "pre_reply"


@dataclass(frozen=True)
class OnErrorEvent:
    error_type: str
    message: str
    tool: str | None = None
    event: ClassVar[Event] = "on_error"


HookEvent = PreToolEvent | PostToolEvent | PreReplyEvent | OnErrorEvent


@dataclass(frozen=True)
class HookDecision:
    """What a hook wants: `veto` stops the step, `rewrite` replaces the text."""

    hook: str
    action: Literal["veto", "rewrite"]
    reason: str
    text: str | None = None
    details: Mapping[str, Any] = field(default_factory=dict)


class Hook:
    """Base class for Python hooks: override the events you need; the rest do nothing."""

    name: ClassVar[str] = ""

    def pre_tool(self, event: PreToolEvent) -> HookDecision | None:
        return None

    def post_tool(self, event: PostToolEvent) -> HookDecision | None:
        return None

    def pre_reply(self, event: PreReplyEvent) -> HookDecision | None:
        return None

    def on_error(self, event: OnErrorEvent) -> HookDecision | None:
        return None


# ---- declarative rules ----
class _Rule(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="Referenced from enabled.hooks.")
    description: str = Field(default="", description="Why the rule exists (shown in diffs).")

    def tools_referenced(self) -> list[str]:
        return []


def _compile_all(patterns: list[str]) -> list[str]:
    for p in patterns:
        try:
            re.compile(p)
        except re.error as exc:
            raise ValueError(f"invalid regex {p!r}: {exc}") from None
    return patterns


_CLAUSE_END = re.compile(r"[.!?](?!\d)|,(?!\d)|[;:\n。！？；：，—–]| - |\bbut\b|但是?|不过")


class _PatternRule(_Rule):
    patterns: list[str] = Field(min_length=1, description="Regexes, matched case-insensitively.")
    unless_preceded_by: str | None = Field(
        default=None, description="A regex searched in the clause before a match (from the last "
        "punctuation mark); a hit exempts that match, e.g. a negation: 'it does not cure acne'.")
    _check = field_validator("patterns")(_compile_all)

    @field_validator("unless_preceded_by")
    @classmethod
    def _check_unless(cls, v: str | None) -> str | None:
        return v if v is None else _compile_all([v])[0]

    def hits(self, text: str) -> list[re.Match[str]]:
        """Every match of the patterns that no `unless_preceded_by` exempts."""
        out = []
        for p in self.patterns:
            for m in re.finditer(p, text, re.IGNORECASE):
                clause = _CLAUSE_END.split(text[:m.start()])[-1]
                if not (self.unless_preceded_by and re.search(self.unless_preceded_by, clause, re.I)):
                    out.append(m)
        return out


class ForbiddenPhrases(_PatternRule):
    """Regexes a reply must not match (case-insensitive); veto it or rewrite the match."""

    kind: Literal["forbidden_phrases"]
    event: Literal["pre_reply"] = "pre_reply"
    action: Literal["veto", "rewrite"] = "veto"
    replacement: str = Field(default="", description="Text that replaces a match on rewrite.")

    def evaluate(self, ev: PreReplyEvent) -> HookDecision | None:
        found = self.hits(ev.text)
        if not found:
            return None
        hits = [m.group(0) for m in found]
        reason = f"forbidden phrase(s): {', '.join(repr(h) for h in hits)}"
        if self.action == "veto":
            return HookDecision(self.name, "veto", reason, details={"matches": hits})
        spans: list[list[int]] = []
        for m in sorted(found, key=lambda m: m.start()):
            if spans and m.start() < spans[-1][1]:
                spans[-1][1] = max(spans[-1][1], m.end())
            else:
                spans.append([m.start(), m.end()])
        text = ev.text
        for start, end in reversed(spans):
            text = text[:start] + self.replacement + text[end:]
        return HookDecision(self.name, "rewrite", reason, text=text, details={"matches": hits})


class MaxReplyLength(_Rule):
    """Live-stream replies must be short: veto, or truncate at a sentence boundary."""

    kind: Literal["max_reply_length"]
    event: Literal["pre_reply"] = "pre_reply"
    max_chars: int | str = Field(
        description="A number, or the name of an integer rule parameter (resolved at load)."
    )
    action: Literal["veto", "truncate"] = "truncate"

    def evaluate(self, ev: PreReplyEvent) -> HookDecision | None:
        assert isinstance(self.max_chars, int), "unresolved max_chars; load through load_harness"
        if len(ev.text) <= self.max_chars:
            return None
        reason = f"reply has {len(ev.text)} characters, limit is {self.max_chars}"
        if self.action == "veto":
            return HookDecision(self.name, "veto", reason)
        cut = ev.text[: self.max_chars]
        ends = [cut.rfind(c) for c in ".!?。！？"]
        end = max(ends)
        text = cut[: end + 1] if end >= self.max_chars // 3 else cut.rstrip() + "…"
        return HookDecision(self.name, "rewrite", reason, text=text)


class ToolPermission(_Rule):
    """Named tools may run only when the episode holds the permission."""

    kind: Literal["tool_permission"]
    event: Literal["pre_tool"] = "pre_tool"
    tools: list[str] = Field(min_length=1)
    permission: str | None = Field(
        default=None, description="Permission required; default: the tool's own declared one."
    )

    def tools_referenced(self) -> list[str]:
        return list(self.tools)

    def evaluate(self, ev: PreToolEvent) -> HookDecision | None:
        needed = self.permission or ev.tool_permission
        if ev.tool not in self.tools or needed is None or needed in ev.permissions:
            return None
        return HookDecision(self.name, "veto", f"permission denied: '{ev.tool}' needs '{needed}'",
                            details={"permission": needed})


class ClaimRequiresTool(_PatternRule):
    """A reply that states a price/stock fact must rest on a tool result from this episode."""

    kind: Literal["claim_requires_tool"]
    event: Literal["pre_reply"] = "pre_reply"
    claim: str = Field(description="Name of the claim type, e.g. price or stock.")
    tools: list[str] = Field(min_length=1, description="Any one of these must have succeeded.")

    def tools_referenced(self) -> list[str]:
        return list(self.tools)

    def evaluate(self, ev: PreReplyEvent) -> HookDecision | None:
        if set(self.tools) & set(ev.tools_called) or not (found := self.hits(ev.text)):
            return None
        hit = found[0].group(0)
        return HookDecision(
            self.name, "veto",
            f"{self.claim} claim {hit!r} without a result from {' or '.join(self.tools)}",
            details={"claim": self.claim, "match": hit},
        )


HookRule = Annotated[
    ForbiddenPhrases | MaxReplyLength | ToolPermission | ClaimRequiresTool,
    Field(discriminator="kind"),
]


class HookFile(BaseModel):
    """The content of one `hooks/*.yaml` file."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rules: list[HookRule] = Field(default_factory=list)

"""Apply a harness's hooks to an event. A hook that raises is recorded and skipped: it never
breaks the run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..harness import Hook, HookDecision, PreReplyEvent
from ..harness.hooks import HookEvent


@dataclass
class HookOutcome:
    veto: HookDecision | None = None
    rewrites: list[HookDecision] = field(default_factory=list)
    errors: list[tuple[str, str]] = field(default_factory=list)
    """(hook name, error) for hooks that raised."""
    text: str | None = None
    """The text after rewrites (pre_reply / post_tool), when any hook rewrote it."""


def _hook_name(hook: Any) -> str:
    return str(getattr(hook, "name", "") or type(hook).__name__)


def run_hooks(hooks: Sequence[Any], event: HookEvent) -> HookOutcome:
    """First veto wins; rewrites chain (each hook sees the text the previous one produced)."""
    outcome = HookOutcome()
    current = event
    for hook in hooks:
        try:
            if isinstance(hook, Hook):
                decision = getattr(hook, current.event)(current)
            elif getattr(hook, "event", None) == current.event:
                decision = hook.evaluate(current)
            else:
                continue
        except Exception as exc:  # noqa: BLE001 - a broken hook is recorded, not fatal
            outcome.errors.append((_hook_name(hook), f"{type(exc).__name__}: {exc}"))
            continue
        if decision is None:
            continue
        if decision.action == "veto":
            outcome.veto = decision
            return outcome
        if decision.text is not None:
            outcome.rewrites.append(decision)
            outcome.text = decision.text
            if isinstance(current, PreReplyEvent):
                current = replace(current, text=decision.text)
            elif hasattr(current, "output"):
                current = replace(current, output=decision.text)  # type: ignore[type-var]
    return outcome

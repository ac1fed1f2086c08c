"""Ground truth of a simulated conversation, in types every domain shares.

A domain's simulator fills them (see `hatkit.domain.Domain.questions`); the oracle plays a
turn's plan, the judge and the evaluation suites check replies against its facts and must-not
patterns. Nothing here knows what a domain sells or answers.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

__all__ = ["SPLITS", "Fact", "PlannedCall", "Question", "Split", "Turn", "checked_request",
           "reply_states_facts", "stable_hash", "violations"]

Split = Literal["train", "dev", "test"]
SPLITS: tuple[Split, ...] = get_args(Split)


@dataclass(frozen=True)
class Fact:
    """One thing a correct reply must state; `accept` lets a judge check it by substring."""

    name: str
    value: str
    accept: tuple[str, ...]
    product_id: str | None = None
    """The domain item the fact is about (a product, an order, ...), when there is one."""


@dataclass(frozen=True)
class PlannedCall:
    """One gold tool call, by the tool's canonical (function) name, so renames don't matter."""

    tool: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Turn:
    """One user message with its gold plan, facts, forbidden patterns and gold reply."""

    text: str
    plan: tuple[PlannedCall, ...]
    facts: tuple[Fact, ...]
    must_not: tuple[str, ...]
    reply: str


@dataclass(frozen=True)
class Question:
    """One user conversation (1 turn, or more for follow-ups) with its ground truth.

    `template_id`, `product_ids` and `params` are what the domain needs to rebuild the ground
    truth under other rules (`Domain.with_rules`); the user's text never depends on rules."""

    id: str
    category: str
    locale: str
    template_id: str
    product_ids: tuple[str, ...]
    params: Mapping[str, Any]
    split: Split
    turns: tuple[Turn, ...]

    @property
    def text(self) -> str:
        return self.turns[0].text


def checked_request(split: str, locale: str, categories: Sequence[str] | None, *,
                    locales: Sequence[str], known: Sequence[str]) -> list[str]:
    """The categories a question generator was asked for (all `known` ones by default), once
    the split, locale and categories are checked; ValueError names the choices."""
    if split not in SPLITS:
        raise ValueError(f"unknown split '{split}' (choose from {', '.join(SPLITS)})")
    if locale not in locales:
        raise ValueError(f"unknown locale '{locale}' (choose from {', '.join(locales)})")
    cats = list(categories) if categories else list(known)
    if bad := [c for c in cats if c not in known]:
        raise ValueError(f"unknown categories {bad} (choose from {', '.join(known)})")
    return cats


def stable_hash(*parts: object) -> int:
    """A hash that is the same in every process (Python's `hash` of a str is salted)."""
    return int(hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:15], 16)


def reply_states_facts(reply: str, facts: Sequence[Fact]) -> list[Fact]:
    """The facts `reply` misses (a fact is stated when any of its accept strings occurs)."""
    low = reply.lower()
    return [f for f in facts if not any(a in low for a in f.accept)]


@lru_cache(maxsize=4096)
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


def violations(reply: str, turn: Turn) -> list[str]:
    """The turn's must-not patterns that `reply` matches (case-insensitive)."""
    return [p for p in turn.must_not if _compiled(p).search(reply)]

"""The judge harness read into thresholds, weights and phrase patterns.

Everything tunable lives in the judge harness folder, so a calibration round edits that
folder (and so the judge hash) rather than code.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hatkit.harness import Harness
from hatkit.harness.hooks import ForbiddenPhrases
from hatkit.judge.patterns import FastPattern as Pattern


def _patterns(h: Harness, names: Iterable[str]) -> list[tuple[str, list[Pattern]]]:
    out = []
    for name in names:
        rule = h.hook_rules.get(name)
        if not isinstance(rule, ForbiddenPhrases):
            raise ValueError(f"judge harness '{h.name}': rule list '{name}' is not a forbidden_phrases "
                             "hook in hooks/")
        out.append((name, [Pattern(p, re.I | re.M) for p in rule.patterns]))
    return out


@dataclass(frozen=True)
class _Config:
    rules: Mapping[str, Any]
    compliance: list[tuple[str, list[Pattern]]]
    accuracy_hooks: frozenset[str]
    persona: list[Pattern]
    injection: list[Pattern]
    leak: list[Pattern]
    health: list[Pattern]
    """What a health question is about (conditions, symptoms, body functions)."""
    compliance_any: Pattern
    """All compliance patterns as one alternation: one pass tells a reply with no match (most
    of them) from one that needs the per-pattern walk."""

    def num(self, name: str) -> float:
        return float(self.rules[name])

    @classmethod
    def of(cls, h: Harness) -> _Config:
        r = h.rules

        def names(key: str) -> tuple[str, ...]:
            v = r.get(key, ())
            return (v,) if isinstance(v, str) else tuple(str(x) for x in v)

        def flat(key: str) -> list[Pattern]:
            return [p for _, ps in _patterns(h, names(key)) for p in ps]

        compliance = _patterns(h, names("compliance_hooks"))
        union = "|".join(f"(?:{p.pattern})" for _, ps in compliance for p in ps) or "(?!)"
        return cls(r, compliance, frozenset(names("accuracy_hooks")), flat("persona_hooks"),
                   flat("injection_hooks"), flat("leak_hooks"), flat("health_topic_hooks"),
                   Pattern(union, re.I | re.M))

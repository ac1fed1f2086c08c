"""A readable diff between two harness versions: which rules, skills, tools, hooks and
prompts changed, rather than a wall of file hunks."""

from __future__ import annotations

import difflib
import inspect
import json
from dataclasses import dataclass, field
from typing import Any

from .harness import Harness


@dataclass
class Change:
    section: str
    """rules, settings, skills, tools, hooks or prompts."""
    name: str
    kind: str
    """added, removed or changed."""
    before: Any = None
    after: Any = None
    detail: list[str] = field(default_factory=list)
    """Unified-diff lines for text changes."""


@dataclass
class HarnessDiff:
    before_hash: str
    after_hash: str
    changes: list[Change]

    @property
    def empty(self) -> bool:
        return not self.changes

    def lines(self) -> list[str]:
        """Plain-text rendering (what `hatkit harness diff` prints)."""
        if self.empty:
            return [f"no changes ({self.before_hash[:12]})"]
        out = [f"harness {self.before_hash[:12]} -> {self.after_hash[:12]}"]
        for section in ("rules", "settings", "skills", "tools", "hooks", "prompts"):
            items = [c for c in self.changes if c.section == section]
            if not items:
                continue
            out.append(f"{section}:")
            for c in items:
                sign = {"added": "+", "removed": "-", "changed": "~"}[c.kind]
                if c.kind == "changed" and not c.detail:
                    out.append(f"  {sign} {c.name}: {_short(c.before)} -> {_short(c.after)}")
                elif c.kind == "changed":
                    out.append(f"  {sign} {c.name}")
                else:
                    value = c.after if c.kind == "added" else c.before
                    out.append(f"  {sign} {c.name}" + (f": {_short(value)}" if section in
                                                       ("rules", "settings") else ""))
                out.extend(f"      {d}" for d in c.detail)
        return out


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flat(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): data}


def _text_diff(a: str, b: str, name: str) -> list[str]:
    return [line.rstrip("\n") for line in difflib.unified_diff(
        a.splitlines(), b.splitlines(), f"a/{name}", f"b/{name}", n=1, lineterm="")][2:]


def _compare(section: str, a: dict[str, Any], b: dict[str, Any], text: bool = False) -> list[Change]:
    changes = []
    for name in sorted(a.keys() | b.keys()):
        if name not in b:
            changes.append(Change(section, name, "removed", before=a[name]))
        elif name not in a:
            changes.append(Change(section, name, "added", after=b[name]))
        elif a[name] != b[name]:
            detail = _text_diff(a[name], b[name], name) if text else []
            changes.append(Change(section, name, "changed", a[name], b[name], detail))
    return changes


def diff_harnesses(a: Harness, b: Harness) -> HarnessDiff:
    spec_a = a.spec.model_dump(exclude={"rules"})
    spec_b = b.spec.model_dump(exclude={"rules"})
    skills_a = {n: f"{s.description}\n{s.body}" for n, s in a.skills.items()}
    skills_b = {n: f"{s.description}\n{s.body}" for n, s in b.skills.items()}
    tools_a = {n: json.dumps(t.openai_schema(), indent=1) + f"\nkind={t.kind} permission={t.permission}"
               for n, t in a.tools.items()}
    tools_b = {n: json.dumps(t.openai_schema(), indent=1) + f"\nkind={t.kind} permission={t.permission}"
               for n, t in b.tools.items()}
    hooks_a = {n: json.dumps(r.model_dump(), indent=1) for n, r in a.hook_rules.items()}
    hooks_b = {n: json.dumps(r.model_dump(), indent=1) for n, r in b.hook_rules.items()}
    hooks_a.update({n: f"python hook {c.__qualname__}" for n, c in a.hook_classes.items()})
    hooks_b.update({n: f"python hook {c.__qualname__}" for n, c in b.hook_classes.items()})
    changes = [
        *_compare("rules", dict(a.spec.rules), dict(b.spec.rules)),
        *_compare("settings", _flat(spec_a), _flat(spec_b)),
        *_compare("skills", skills_a, skills_b, text=True),
        *_compare("tools", tools_a, tools_b, text=True),
        *_compare("hooks", hooks_a, hooks_b, text=True),
        *_compare("prompts", dict(a.templates), dict(b.templates), text=True),
    ]
    code_a = _tool_code(a)
    code_b = _tool_code(b)
    for name in sorted(code_a.keys() & code_b.keys()):
        if code_a[name] != code_b[name] and name not in {c.name for c in changes}:
            changes.append(Change("tools", name, "changed",
                                  detail=_text_diff(code_a[name], code_b[name], f"{name} (code)")))
    return HarnessDiff(a.content_hash, b.content_hash, changes)


def _tool_code(h: Harness) -> dict[str, str]:
    out = {}
    for name, t in h.tools.items():
        try:
            out[name] = inspect.getsource(t.fn)
        except (OSError, TypeError):
            out[name] = ""
    return out

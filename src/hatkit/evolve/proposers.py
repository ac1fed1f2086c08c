"""Propose: the `Proposer` interface and the rule-based proposer (the offline default).

A proposer reads the diagnosis (and, if it wants, the failing traces) and returns candidate
`Edit`s, best first. The rule-based proposer maps each cluster's concrete cause to one
templated, deterministic edit:

* `unknown_tool:X`, X a tool in tools/ that harness.yaml does not enable -> enable it;
* `unknown_tool:X`, X no tool at all but named literally by a skill or prompt (a skill that
  names the wrong tool) -> replace it there with the closest real tool, as a template
  reference (`{{ tool.<canonical> }}`) so a later rename cannot break it again;
* `rule:X` (a stated value contradicts the rule) -> replace hard-coded literals of the
  stated value in skills and prompts with `{{ X }}`;
* too long, hook violation, failed fault recovery, invented facts -> one instruction line
  added to the system prompt (skipped when it is already there).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..harness import Harness
from .diagnose import Cluster, Diagnosis
from .edits import Edit


@dataclass(frozen=True)
class ProposalContext:
    harness: Harness
    """The round's base harness (read-only; edits go to a working copy)."""
    diagnosis: Diagnosis
    failing_traces: Path | None = None
    """JSONL of the round's failing dev traces (for proposers that read them)."""
    round: int = 0


class Proposer(Protocol):
    name: str

    def propose(self, ctx: ProposalContext) -> list[Edit]:
        """Candidate edits, best first; [] when it has nothing to offer."""
        ...


_INSTRUCTIONS = {
    "too_long": "- Keep every reply under {{ reply_max_chars }} characters; one or two short "
                "sentences.",
    "failed_fault_recovery": "- If a tool call fails with a timeout or server error, call it "
                             "once more; if it fails again, tell the viewer you cannot check "
                             "right now.",
    "invented_fact": "- State only facts that a tool returned in this conversation; if a tool "
                     "did not return it, do not say it.",
    "unanswered": "- Answer every part of the viewer's question, using the numbers the tools "
                  "returned.",
}
_NUM = re.compile(r"\d+(?:\.\d+)?")


class RuleBasedProposer:
    """Templated edits from the diagnosis; deterministic, no model."""

    name = "rule_based"

    def __init__(self, max_edits: int = 3) -> None:
        self.max_edits = max_edits

    def propose(self, ctx: ProposalContext) -> list[Edit]:
        out: list[Edit] = []
        seen: set[str] = set()
        for c in ctx.diagnosis.clusters:
            for edit in self._for_cluster(ctx.harness, c):
                if edit.edit_id not in seen:
                    seen.add(edit.edit_id)
                    out.append(edit)
            if len(out) >= self.max_edits:
                break
        return out[:self.max_edits]

    def _for_cluster(self, h: Harness, c: Cluster) -> list[Edit]:
        info = {"key": c.key, "category": c.category, "error_type": c.error_type,
                "count": c.count, "details": c.details, "examples": c.examples}
        detail = c.top_detail
        if c.error_type == "wrong_or_missing_tool" and detail.startswith("unknown_tool:"):
            name = detail.split(":", 1)[1]
            files = _enable_tool(h, name) if name in h.tools else _fix_tool_reference(h, name)
            why = (f"{c.count} {c.category} failure(s) called '{name}', which "
                   + ("exists in tools/ but is not enabled: enable it." if name in h.tools else
                      "is no tool: the skill text names it; point it at the right tool."))
        elif c.error_type == "stale_rule_value" and detail.startswith("rule:"):
            files = _templatise_rule(h, detail.split(":", 1)[1].split(".")[0], c.evidence)
            why = f"{c.count} {c.category} failure(s) stated a value contradicting {detail}."
        elif c.error_type in _INSTRUCTIONS or c.error_type == "hook_violation":
            files = _add_instruction(h, c)
            why = f"{c.count} {c.category} failure(s) of type {c.error_type} ({detail})."
        else:
            files = {}
            why = ""
        return [Edit(files, why, info, self.name)] if files else []


# -- templates -----------------------------------------------------------------------------------
def _read(h: Harness, rel: str) -> str:
    return (h.root / rel).read_text(encoding="utf-8")


def _enable_tool(h: Harness, name: str) -> dict[str, str | None]:
    text = _read(h, "harness.yaml")
    m = re.search(r"^(enabled:\s*\n(?:[ \t]+.*\n)*?[ \t]+tools:[ \t]*\[)([^\]]*)(\])", text, re.M)
    if m is None or name in [t.strip() for t in m.group(2).split(",")]:
        return {}
    items = [t.strip() for t in m.group(2).split(",") if t.strip()] + [name]
    return {"harness.yaml": text[:m.start(2)] + ", ".join(items) + text[m.end(2):]}


def _text_files(h: Harness) -> list[str]:
    files = [p for p in ("skills", "prompts") if (h.root / p).is_dir()]
    return sorted(f.relative_to(h.root).as_posix() for d in files for f in (h.root / d).rglob("*")
                  if f.is_file() and f.suffix in (".md", ".j2"))


def _fix_tool_reference(h: Harness, wrong: str) -> dict[str, str | None]:
    enabled = list(h.spec.enabled.tools)
    match = difflib.get_close_matches(wrong, enabled, n=1, cutoff=0.4) or difflib.get_close_matches(
        wrong, list(h.tools), n=1, cutoff=0.4)
    if not match:
        return {}
    ref = "{{ tool." + h.tools[match[0]].canonical + " }}"
    pat = re.compile(rf"(?<![\w.]){re.escape(wrong)}(?!\w)")
    out: dict[str, str | None] = {}
    for rel in _text_files(h):
        text = _read(h, rel)
        if pat.search(text):
            out[rel] = pat.sub(ref, text)
    return out


def _templatise_rule(h: Harness, rule: str, evidence: Sequence[str]) -> dict[str, str | None]:
    if rule not in h.rules:
        return {}
    stated = {n for line in evidence if f"rule:{rule}" in line
              for n in _NUM.findall(line.split(" expected ")[0])}
    stated.discard(str(h.rules[rule]))
    out: dict[str, str | None] = {}
    for rel in _text_files(h):
        text = _read(h, rel)
        new = text
        for n in stated:  # a literal of the stale value outside any {{ }} expression
            new = re.sub(rf"(?<![\d.{{]){re.escape(n)}(?![\d}}])", "{{ " + rule + " }}", new)
        if new != text:
            out[rel] = new
    return out


def _add_instruction(h: Harness, c: Cluster) -> dict[str, str | None]:
    if c.error_type == "hook_violation":
        hook = h.hook_rules.get(c.top_detail.removeprefix("hook:"))
        if hook is None or not getattr(hook, "description", ""):
            return {}
        line = f"- {hook.description}"
    else:
        line = _INSTRUCTIONS[c.error_type]
        if "reply_max_chars" in line and "reply_max_chars" not in h.rules:
            return {}
    rel = "prompts/system.j2"
    if not (h.root / rel).is_file():
        return {}
    text = _read(h, rel)
    if line in text:
        return {}
    anchor = "\n\nCurrent store rules:" if "\n\nCurrent store rules:" in text else None
    if anchor:
        return {rel: text.replace(anchor, "\n" + line + anchor, 1)}
    lines = text.split("\n", 1)
    return {rel: lines[0] + "\n" + line + ("\n" + lines[1] if len(lines) > 1 else "\n")}

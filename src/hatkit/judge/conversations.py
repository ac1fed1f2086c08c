"""Labelled conversations: judge calibration data written by people (or by anyone who has not
read the judge), as OpenAI-style messages with real tool outputs and a 0/1 label per dimension.

    {"id": ..., "family": "health_claim", "locale": "en",
     "messages": [{"role": "user", "content": ...},
                  {"role": "assistant", "tool_calls": [{"name": ..., "arguments": {...}}]},
                  {"role": "tool", "name": ..., "content": <the tool's JSON output>},
                  {"role": "assistant", "content": "the final reply"}],
     "labels": {"accuracy": 0, "effectiveness": 1}, "why": "..."}

`to_trace` turns one into the Trace the agent runtime would have recorded under a harness, so
any judge scores it like a live episode; `family_agreement` reports agreement per family with
Wilson intervals, the leave-one-family-out view a calibration needs: a family the judge's checks
were not written against measures whether it generalises.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..agent.trace import Span, ToolRecord, Trace
from ..harness import Harness
from .agreement import wilson
from .verdict import DIMENSIONS, Judge, Verdict

_REQUIRED = ("id", "family", "locale", "messages", "labels")


class ConversationError(ValueError):
    """Bad lines of a conversations file; the message names each as file:line."""


@dataclass(frozen=True)
class LabelledConversation:
    id: str
    family: str
    locale: str
    messages: list[dict[str, Any]]
    labels: dict[str, int]
    why: str = ""


def _check(row: Any, where: str) -> tuple[LabelledConversation | None, list[str]]:
    if not isinstance(row, dict):
        return None, [f"{where}: expected a JSON object"]
    errors = [f"{where}: missing '{k}'" for k in _REQUIRED if k not in row]
    labels = row.get("labels")
    if isinstance(labels, dict):
        errors += [f"{where}: label '{d}' must be 0 or 1" for d in DIMENSIONS if labels.get(d) not in (0, 1)]
    elif "labels" in row:
        errors.append(f"{where}: 'labels' must be an object")
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        errors.append(f"{where}: 'messages' must be a non-empty list")
    elif not any(m.get("role") == "assistant" and m.get("content") for m in messages if isinstance(m, dict)):
        errors.append(f"{where}: no assistant reply")
    if errors or not isinstance(messages, list) or not isinstance(labels, dict):
        return None, errors
    return LabelledConversation(
        str(row["id"]),
        str(row["family"]),
        str(row["locale"]),
        list(messages),
        {d: int(labels[d]) for d in DIMENSIONS},
        str(row.get("why", "")),
    ), []


def load_conversations(path: Path | str) -> list[LabelledConversation]:
    """Every line of a conversations file; ConversationError lists all bad lines."""
    path = Path(path)
    out, problems, seen = [], [], set()
    for lineno, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"{path}:{lineno}: not JSON ({exc.msg})")
            continue
        conv, errors = _check(row, f"{path}:{lineno}")
        if conv is not None and conv.id in seen:
            errors.append(f"{path}:{lineno}: id '{conv.id}' repeats")
        problems += errors
        if conv is not None and not errors:
            seen.add(conv.id)
            out.append(conv)
    if problems:
        raise ConversationError("\n".join(problems))
    return out


def _is_error(content: Any) -> bool:
    return isinstance(content, dict) and isinstance(content.get("error"), dict)


def to_trace(conv: LabelledConversation, harness: Harness) -> Trace:
    """The conversation as the runtime records an episode under `harness` (text spans, tool
    records with outputs or error types, the final reply)."""
    from ..models.chat_format import tool_result_text

    trace = Trace(
        harness.name,
        harness.content_hash,
        "labelled",
        conv.locale,
        episode_id=conv.id,
        meta={"question_id": conv.id, "category": "", "family": conv.family, "source": "labelled"},
    )
    trace.spans.append(
        Span(
            "system",
            harness.render(
                conv.locale if conv.locale in harness.spec.locales else harness.spec.locale
            ).system_prompt,
            source="harness",
        )
    )
    turn = 0
    pending: list[tuple[str, dict[str, Any]]] = []
    for m in conv.messages:
        role = m.get("role")
        if role == "user":
            trace.spans.append(Span("user", str(m.get("content", "")), turn=turn, source="viewer"))
        elif role == "assistant" and m.get("tool_calls"):
            calls = [(str(c["name"]), dict(c.get("arguments") or {})) for c in m["tool_calls"]]
            shown = [{"name": name, "arguments": args} for name, args in calls]
            trace.spans.append(Span("tool_call", tool_result_text(shown), turn=turn, source="model"))
            pending += calls
            turn += 1
        elif role == "tool":
            name, args = pending.pop(0) if pending else (str(m.get("name", "")), {})
            content = m.get("content")
            if isinstance(content, dict) and _is_error(content):
                err: dict[str, Any] = content["error"]
                trace.tool_calls.append(
                    ToolRecord(
                        name,
                        args,
                        None,
                        str(err.get("type", "tool_exception")),
                        str(err.get("message", "")),
                        turn=turn - 1,
                    )
                )
            else:
                trace.tool_calls.append(ToolRecord(name, args, content, turn=turn - 1))
            trace.spans.append(Span("tool_output", tool_result_text(content), turn=turn, source="tool"))
        elif role == "assistant":
            text = str(m.get("content", ""))
            trace.spans.append(Span("reply", text, turn=turn, source="model"))
            trace.final_reply = text
            turn += 1
    return trace


@dataclass
class Agreement:
    """How often a judge's pass/fail matches the labels, with a 95% Wilson interval."""

    agree: int = 0
    n: int = 0
    disagreements: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.agree / self.n if self.n else 0.0

    def interval(self) -> tuple[float, float]:
        return wilson(self.agree, self.n)

    def to_dict(self) -> dict[str, Any]:
        lo, hi = self.interval()
        return {
            "agree": self.agree,
            "n": self.n,
            "rate": round(self.rate, 4),
            "lo": round(lo, 4),
            "hi": round(hi, 4),
            "disagreements": self.disagreements[:10],
        }


def judge_conversations(
    judge: Judge, convs: Sequence[LabelledConversation], harness: Harness
) -> list[tuple[LabelledConversation, Verdict]]:
    return [(c, judge.judge(to_trace(c, harness), harness)) for c in convs]


@dataclass(frozen=True)
class FamilySplit:
    """Which families the judge's checks may be developed on (`dev`: read item by item while
    fixing a check) and which stay sealed (never read, only scored): agreement on the sealed
    families is the leave-one-family-out figure. Clean conversations are split by id, since
    both halves are needed: false alarms are measured on the sealed half."""

    dev: frozenset[str]
    sealed: frozenset[str]
    clean_dev_ids: frozenset[str] = frozenset()
    clean_family: str = "clean"

    def group(self, conv: LabelledConversation) -> str:
        if conv.family == self.clean_family:
            return "dev" if conv.id in self.clean_dev_ids else "sealed"
        if conv.family in self.dev:
            return "dev"
        if conv.family in self.sealed:
            return "sealed"
        return "unassigned"

    def family(self, conv: LabelledConversation) -> str:
        """The row a conversation is reported in: clean splits into clean:dev / clean:sealed."""
        return f"{conv.family}:{self.group(conv)}" if conv.family == self.clean_family else conv.family


def split_file(labels: Path | str) -> Path:
    """Where a labels file's split lives: `<stem>.split.yaml` beside it."""
    labels = Path(labels)
    return labels.with_name(labels.stem + ".split.yaml")


def load_split(path: Path | str, convs: Sequence[LabelledConversation] | None = None) -> FamilySplit:
    """A split file: {dev: [families], sealed: [families], clean_dev_ids: [ids]}. With `convs`,
    every family must be assigned to exactly one side and every id must exist."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text("utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConversationError(f"{path}: cannot read the family split ({exc})") from None
    if not isinstance(data, dict) or not {"dev", "sealed"} <= set(data):
        raise ConversationError(f"{path}: expected a mapping with 'dev' and 'sealed' family lists")
    split = FamilySplit(frozenset(map(str, data["dev"] or [])), frozenset(map(str, data["sealed"] or [])),
                        frozenset(map(str, data.get("clean_dev_ids") or [])),
                        str(data.get("clean_family", "clean")))
    problems = [f"{path}: family '{f}' is both dev and sealed" for f in sorted(split.dev & split.sealed)]
    if convs is not None:
        families = {c.family for c in convs} - {split.clean_family}
        problems += [f"{path}: family '{f}' is neither dev nor sealed" for f in sorted(
            families - split.dev - split.sealed)]
        ids = {c.id for c in convs if c.family == split.clean_family}
        problems += [f"{path}: clean_dev_ids names '{i}', not a clean conversation" for i in sorted(
            split.clean_dev_ids - ids)]
    if problems:
        raise ConversationError("\n".join(problems))
    return split


def family_agreement(
    judged: Iterable[tuple[LabelledConversation, Verdict]], thresholds: Mapping[str, float],
    split: FamilySplit | None = None,
) -> dict[str, dict[str, Agreement]]:
    """family -> dimension -> Agreement (plus family "all"; with a split, also "all dev" and
    "all sealed", and clean as clean:dev / clean:sealed). A verdict passes a dimension at the
    judge's threshold; the label says whether it should."""
    out: dict[str, dict[str, Agreement]] = {}
    for conv, verdict in judged:
        rows = (conv.family, "all") if split is None else (
            split.family(conv), f"all {split.group(conv)}", "all")
        for family in rows:
            for dim in DIMENSIONS:
                a = out.setdefault(family, {}).setdefault(dim, Agreement())
                said = verdict.passed(dim, thresholds.get(dim, 0.5))
                a.n += 1
                if said == bool(conv.labels[dim]):
                    a.agree += 1
                else:
                    a.disagreements.append(
                        f"{conv.id}: judge {'pass' if said else 'fail'}, label "
                        f"{conv.labels[dim]} ({conv.why})"
                    )
    return out


def false_alarms(
    judged: Iterable[tuple[LabelledConversation, Verdict]],
    thresholds: Mapping[str, float],
    clean_family: str = "clean",
    split: FamilySplit | None = None,
    group: str = "sealed",
) -> Agreement:
    """Clean conversations (labelled 1/1) the judge failed on some dimension: agree = not
    failed, so `1 - rate` is the false-alarm rate. With a split, only the clean conversations
    of `group`."""
    a = Agreement()
    for conv, verdict in judged:
        if conv.family != clean_family or (split is not None and split.group(conv) != group):
            continue
        a.n += 1
        failed = [d for d in DIMENSIONS if not verdict.passed(d, thresholds.get(d, 0.5))]
        if failed:
            a.disagreements.append(f"{conv.id}: judge failed {', '.join(failed)}")
        else:
            a.agree += 1
    return a


def family_report(judge: Judge, convs: Sequence[LabelledConversation], harness: Harness,
                  split: FamilySplit | None = None) -> dict[str, Any]:
    """The judge on every conversation: per-family agreement (JSON-ready) and false alarms
    on clean conversations (with a split, the sealed half's, and the dev half's beside it)."""
    thresholds = getattr(judge, "thresholds", {"accuracy": 0.5, "effectiveness": 0.5})
    judged = judge_conversations(judge, convs, harness)
    agreement = family_agreement(judged, thresholds, split)
    out: dict[str, Any] = {
        "families": {f: {d: a.to_dict() for d, a in dims.items()} for f, dims in agreement.items()},
        "groups": {split.family(c): split.group(c) for c in convs} if split else {},
        "false_alarms": false_alarms(judged, thresholds, split=split).to_dict(),
    }
    if split is not None:
        out["false_alarms_dev"] = false_alarms(judged, thresholds, split=split, group="dev").to_dict()
    return out

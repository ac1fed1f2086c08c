"""Parse what a model wrote into reasoning, tool calls and a reply, repairing the usual
malformations of small models and recording every repair.

The convention is Hermes/Qwen: optional `<think>...</think>`, then tool calls as
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, or a plain reply.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..models.base import ToolCall

Segment = str  # "think_tool" | "think_reply" | "tool_call" | "reply"

_OPEN = re.compile(r"<think>|<tool_call>")
_CLOSE = {"<think>": "</think>", "<tool_call>": "</tool_call>"}
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_STRING = re.compile(r""""(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'""", re.DOTALL)


@dataclass(frozen=True)
class Repair:
    kind: str
    """missing_close_tag, bare_json, single_quotes, trailing_comma, arguments_string,
    unclosed_think, missing_arguments, code_fence, trailing_text."""
    detail: str = ""


@dataclass(frozen=True)
class BadCall:
    raw: str
    reason: str
    id: str = ""
    """The backend's call id (native calls), so the error answers that call."""
    name: str = ""


@dataclass
class ParsedOutput:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    bad_calls: list[BadCall] = field(default_factory=list)
    repairs: list[Repair] = field(default_factory=list)
    think: str = ""
    reply: str = ""
    spans: list[tuple[Segment, int, int]] = field(default_factory=list)
    """(segment, start, end) character spans covering the text, in order."""

    @property
    def wants_tools(self) -> bool:
        return bool(self.tool_calls or self.bad_calls)

    def segment_at(self, pos: int) -> Segment:
        for seg, start, end in self.spans:
            if start <= pos < end:
                return seg
        return self.spans[-1][0] if self.spans else "reply"


def parse_output(text: str, call_prefix: str = "call") -> ParsedOutput:
    """Split model text into think / tool calls / reply; never raises."""
    out = ParsedOutput(text=text)
    marks: list[tuple[int, int, str]] = []  # (start, end, kind) for think and call regions
    bodies: list[str] = []
    pos = 0
    while (m := _OPEN.search(text, pos)) is not None:  # one pass: whichever tag opens first
        tag = m.group(0)
        close = text.find(_CLOSE[tag], m.end())
        end = len(text) if close < 0 else close + len(_CLOSE[tag])
        inner = text[m.end(): len(text) if close < 0 else close]
        if tag == "<think>":
            if close < 0:
                out.repairs.append(Repair("unclosed_think"))
            marks.append((m.start(), end, "think"))
            out.think += inner.strip()
        else:
            if close < 0:
                out.repairs.append(Repair("missing_close_tag"))
            marks.append((m.start(), end, "call"))
            bodies.append(inner)
        pos = end
    if not bodies:
        bare = _find_bare_call(text, marks)
        if bare is not None:
            start, stop = bare
            out.repairs.append(Repair("bare_json"))
            marks.append((start, stop, "call"))
            bodies.append(text[start:stop])
    for i, body in enumerate(bodies):
        try:
            call, repairs, error = _parse_call(body)
        except (RecursionError, MemoryError):
            call, repairs, error = None, [], "tool call is nested too deeply"
        out.repairs.extend(repairs)
        if call is None:
            out.bad_calls.append(BadCall(body.strip()[:500], error, f"bad_{call_prefix}_{i}"))
        else:
            out.tool_calls.append(ToolCall(call[0], call[1], f"{call_prefix}_{i}"))
    marks.sort()
    _label_spans(out, marks)
    if not out.wants_tools:
        out.reply = _strip_tags("".join(text[s:e] for seg, s, e in out.spans if seg == "reply"))
    return out


def _label_spans(out: ParsedOutput, marks: list[tuple[int, int, str]]) -> None:
    text, pos = out.text, 0
    think_seg = "think_tool" if out.wants_tools else "think_reply"
    free_seg = "think_tool" if out.wants_tools else "reply"
    for start, end, kind in marks:
        if start > pos:
            out.spans.append((free_seg, pos, start))
        out.spans.append((think_seg if kind == "think" else "tool_call", start, end))
        pos = end
    if pos < len(text):
        out.spans.append((free_seg, pos, len(text)))


def _strip_tags(text: str) -> str:
    return re.sub(r"</?(think|tool_call)>", "", text).strip()


def _find_bare_call(text: str, marks: list[tuple[int, int, str]]) -> tuple[int, int] | None:
    """A JSON object with "name" and "arguments" written without tags."""
    for m in re.finditer(r"\{", text):
        if any(s <= m.start() < e for s, e, _ in marks):
            continue
        end = _balanced_end(text, m.start())
        if end is None:
            continue
        chunk = text[m.start():end]
        if re.search(r"""["']name["']\s*:""", chunk) and re.search(r"""["']arguments["']\s*:""", chunk):
            return m.start(), end
    return None


def _balanced_end(text: str, start: int) -> int | None:
    depth, in_str, quote, escape = 0, False, "", False
    for i in range(start, len(text)):
        c = text[i]
        if in_str:
            if escape:
                escape = False
            elif c == "\\":
                escape = True
            elif c == quote:
                in_str = False
        elif c in "\"'":
            in_str, quote = True, c
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i + 1
    return None


def _outside_strings(text: str, pattern: re.Pattern[str], repl: str) -> str:
    """Apply a regex substitution only outside quoted strings (values stay untouched)."""
    out, pos = [], 0
    for m in _STRING.finditer(text):
        out.append(pattern.sub(repl, text[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(pattern.sub(repl, text[pos:]))
    return "".join(out)


_LITERALS = [(re.compile(r"\btrue\b"), "True"), (re.compile(r"\bfalse\b"), "False"),
             (re.compile(r"\bnull\b"), "None")]


def _loads(body: str) -> tuple[Any, list[Repair]]:
    repairs: list[Repair] = []
    try:
        return json.loads(body), repairs
    except ValueError:
        pass
    fixed = _outside_strings(body, _TRAILING_COMMA, r"\1")
    if fixed != body:
        repairs.append(Repair("trailing_comma"))
        try:
            return json.loads(fixed), repairs
        except ValueError:
            pass
    try:  # single quotes: Python-literal syntax, evaluated safely (literals only)
        pythonish = fixed
        for pattern, literal in _LITERALS:
            pythonish = _outside_strings(pythonish, pattern, literal)
        value = ast.literal_eval(pythonish)
        repairs.append(Repair("single_quotes"))
        return value, repairs
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        pass
    end = _balanced_end(fixed, fixed.find("{")) if "{" in fixed else None
    if end is not None and fixed[end:].strip():  # trailing junk after the object
        repairs.append(Repair("trailing_text"))
        return _loads(fixed[fixed.find("{"):end])[0], repairs
    raise ValueError("not valid JSON")


def _parse_call(body: str) -> tuple[tuple[str, dict[str, Any]] | None, list[Repair], str]:
    body = body.strip()
    fence: list[Repair] = []
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
        fence.append(Repair("code_fence"))
    if not body:
        return None, fence, "empty tool call"
    try:
        data, repairs = _loads(body)
    except (ValueError, TypeError):
        return None, fence, "tool call is not a JSON object"
    repairs = fence + repairs
    if not isinstance(data, dict):
        return None, repairs, "tool call is not a JSON object"
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        return None, repairs, "tool call has no 'name'"
    args = data.get("arguments", data.get("parameters"))
    if args is None:
        repairs.append(Repair("missing_arguments"))
        args = {}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
            repairs.append(Repair("arguments_string"))
        except ValueError:
            return None, repairs, "'arguments' is a string that is not JSON"
    if not isinstance(args, dict):
        return None, repairs, "'arguments' is not an object"
    return (name.strip(), args), repairs, ""

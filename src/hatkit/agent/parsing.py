"""Parse what a model wrote into reasoning, tool calls and a reply, repairing the usual
malformations of small models and recording every repair.

The convention is Hermes/Qwen: optional `<think>...</think>`, then tool calls as
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, or a plain reply. A block may hold
several calls (objects back to back, or a JSON list): every one is kept, none dropped unseen.
Native calls (a backend's structured `tool_calls`) go through the same repairs
(`parse_native_calls`). Parsing is linear in the text's length: model text is untrusted.
"""

from __future__ import annotations

import ast
import bisect
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..models.base import ToolCall
from ..models.openai_compat import RAW_ARGUMENTS_KEY

Segment = str  # "think_tool" | "think_reply" | "tool_call" | "reply"

_OPEN = re.compile(r"<think>|<tool_call>")
_CLOSE = {"<think>": "</think>", "<tool_call>": "</tool_call>"}
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_STRING = re.compile(r""""(?:[^"\\]|\\.)*+(?:"|\\?\Z)|'(?:[^'\\]|\\.)*+(?:'|\\?\Z)""", re.DOTALL)
"""A quoted string; an unclosed one runs to the end, so every attempt matches (linear time)."""
_SPECIAL = re.compile(r"""[\\{}"']""")
_NAME_KEY = re.compile(r"""["']name["']\s*:""")
_ARGS_KEY = re.compile(r"""["']arguments["']\s*:""")
_MAX_BAD_RAW = 500


@dataclass(frozen=True)
class Repair:
    kind: str
    """missing_close_tag, bare_json, single_quotes, trailing_comma, arguments_string,
    unclosed_think, missing_arguments, code_fence, trailing_text, several_calls."""
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
        """Binary search: the loop asks once per generated token."""
        i = bisect.bisect_right(self.spans, pos, key=lambda span: span[1]) - 1
        if i >= 0 and pos < self.spans[i][2]:
            return self.spans[i][0]
        return self.spans[-1][0] if self.spans else "reply"


def parse_output(text: str, call_prefix: str = "call") -> ParsedOutput:
    """Split model text into think / tool calls / reply; never raises."""
    out = ParsedOutput(text=text)
    marks: list[tuple[int, int, str]] = []  # (start, end, kind) for think and call regions
    bodies: list[str] = []
    thinks: list[str] = []
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
            thinks.append(inner.strip())
        else:
            if close < 0:
                out.repairs.append(Repair("missing_close_tag"))
            marks.append((m.start(), end, "call"))
            bodies.append(inner)
        pos = end
    out.think = "".join(thinks)
    if not bodies:
        for start, stop in _bare_calls(text, marks):
            out.repairs.append(Repair("bare_json"))
            marks.append((start, stop, "call"))
            bodies.append(text[start:stop])
    found: list[ToolCall | BadCall] = []
    for body in bodies:
        try:
            found += _block(body, out.repairs)
        except (RecursionError, MemoryError):
            found.append(BadCall(body.strip(), "tool call is nested too deeply"))
    for i, item in enumerate(found):
        if isinstance(item, ToolCall):
            out.tool_calls.append(replace(item, id=f"{call_prefix}_{i}"))
        else:
            out.bad_calls.append(replace(item, raw=item.raw[:_MAX_BAD_RAW], id=f"bad_{call_prefix}_{i}"))
    marks.sort()
    _label_spans(out, marks)
    if not out.wants_tools:
        out.reply = _strip_tags("".join(text[s:e] for seg, s, e in out.spans if seg == "reply"))
    return out


def parse_native_calls(calls: Sequence[ToolCall], call_prefix: str = "call"
                       ) -> tuple[list[ToolCall], list[BadCall], list[Repair]]:
    """A backend's structured calls, checked and repaired exactly as text calls are.

    Arguments the backend could not read as a JSON object come under RAW_ARGUMENTS_KEY; one
    JSON-string layer is the native form, not a repair. Calls keep the backend's id (else
    `{call_prefix}_{i}`), so each answer matches its call."""
    good: list[ToolCall] = []
    bad: list[BadCall] = []
    repairs: list[Repair] = []
    for i, c in enumerate(calls):
        call_id = c.id or f"{call_prefix}_{i}"
        args: Any = c.arguments[RAW_ARGUMENTS_KEY] if set(c.arguments) == {RAW_ARGUMENTS_KEY} \
            else c.arguments
        try:
            raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, default=str)
            item = _checked(c.name, args, raw, repairs, encoded=True)
        except (RecursionError, MemoryError):
            item = BadCall("", "tool call is nested too deeply")
        if isinstance(item, ToolCall):
            good.append(replace(item, id=call_id))
        else:
            bad.append(replace(item, raw=item.raw[:_MAX_BAD_RAW], id=call_id, name=c.name))
    return good, bad, repairs


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


def _bare_calls(text: str, marks: list[tuple[int, int, str]]) -> list[tuple[int, int]]:
    """JSON objects with "name" and "arguments" written without tags, outside the marks."""
    found, pos = [], 0
    for start, end in [*((s, e) for s, e, _ in sorted(marks)), (len(text), len(text))]:
        found += [(a, b) for a, b in _objects(text, pos, start)[0]
                  if _NAME_KEY.search(text, a, b) and _ARGS_KEY.search(text, a, b)]
        pos = max(pos, end)
    return found


def _objects(text: str, lo: int = 0, hi: int | None = None) -> tuple[list[tuple[int, int]], list[int]]:
    """The outermost balanced {...} spans of text[lo:hi] in order, and the braces left open,
    in linear time.

    A brace never closed (prose) does not hide the objects inside it. Quotes open strings only
    inside braces, as prose has apostrophes; a quote left open at the end is read again as
    plain text. That takes at most two more passes: a string left open means no unescaped
    quote of its kind follows, and there are two kinds."""
    hi = len(text) if hi is None else hi
    ignored: set[int] = set()
    spans: list[tuple[int, int]] = []
    opens: list[int] = []
    for _ in range(3):
        spans, opens = [], []
        quote, at, escaped = "", -1, -1
        for m in _SPECIAL.finditer(text, lo, hi):
            i, c = m.start(), m.group()
            if i == escaped:
                continue
            if c == "\\":
                escaped = i + 1
            elif quote:
                quote = "" if c == quote else quote
            elif c == "{":
                opens.append(i)
            elif c == "}":
                if opens:
                    start = opens.pop()
                    while spans and spans[-1][0] > start:  # now inside this one
                        spans.pop()
                    spans.append((start, i + 1))
            elif opens and i not in ignored:
                quote, at = c, i
        if not quote:
            break
        ignored.add(at)
    return spans, opens


def balanced_end(text: str, start: int) -> int | None:
    """End of the {...} opening at `start`, strings tracked from there; None if it never
    closes. O(n) per call: the judge (judge.llm) calls it for a bounded number of starts."""
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


def pending_call_start(text: str) -> int:
    """Where text that could still become a bare tool call starts (len(text) if nowhere): the
    first brace not yet closed, or a code fence not yet closed. A stream shows nothing past it."""
    opens = _objects(text)[1]
    fence = text.rfind("```") if text.count("```") % 2 else len(text)
    return min(opens[0] if opens else len(text), fence)


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


def _loads(text: str) -> tuple[Any, list[Repair]]:
    """JSON, else JSON with trailing commas removed, else Python-literal syntax (single
    quotes), evaluated safely (literals only). Raises ValueError."""
    try:
        return json.loads(text), []
    except (ValueError, RecursionError):
        pass
    repairs: list[Repair] = []
    fixed = _outside_strings(text, _TRAILING_COMMA, r"\1")
    if fixed != text:
        repairs.append(Repair("trailing_comma"))
        try:
            return json.loads(fixed), repairs
        except (ValueError, RecursionError):
            pass
    try:
        pythonish = fixed
        for pattern, literal in _LITERALS:
            pythonish = _outside_strings(pythonish, pattern, literal)
        value = ast.literal_eval(pythonish)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ValueError("not valid JSON") from None
    return value, [*repairs, Repair("single_quotes")]


def _block(body: str, repairs: list[Repair]) -> list[ToolCall | BadCall]:
    """The calls in one <tool_call> block: one object, several back to back, or a list."""
    body = body.strip()
    if body.startswith("```"):
        body = body.strip("`").removeprefix("json").strip()
        repairs.append(Repair("code_fence"))
    if not body:
        return [BadCall("", "empty tool call")]
    values: list[tuple[Any, str] | BadCall] = []
    try:
        value, fixes = _loads(body)
        if isinstance(value, tuple):  # `{...}, {...}` read as a Python tuple: split it below
            raise ValueError("several objects")
        repairs += fixes
        values.append((value, body))
    except ValueError:
        spans, opens = _objects(body)
        cut = opens[0] if opens else len(body)  # from a brace never closed: one cut-off call
        spans = [(a, b) for a, b in spans if b <= cut]
        if not spans or spans == [(0, len(body))]:
            return [BadCall(body, "tool call is not a JSON object" + (" (a brace is never closed)"
                                                                      if opens else ""))]
        outside = "".join(body[a:b] for a, b in zip([0] + [e for _, e in spans],
                                                     [s for s, _ in spans] + [cut], strict=True))
        if outside.strip(" \t\r\n,"):
            repairs.append(Repair("trailing_text", "text outside the call's JSON"))
        for a, b in spans:
            try:
                value, fixes = _loads(body[a:b])
                repairs += fixes
                values.append((value, body[a:b]))
            except ValueError:
                values.append(BadCall(body[a:b], "tool call is not a JSON object"))
        if opens:
            values.append(BadCall(body[cut:], "tool call is not a JSON object (a brace is never closed)"))
    found: list[ToolCall | BadCall] = []
    for item in values:
        if isinstance(item, BadCall):
            found.append(item)
        elif isinstance(item[0], list):
            if not item[0]:
                found.append(BadCall(item[1], "tool call is an empty list"))
            found += [_call(v, json.dumps(v, ensure_ascii=False, default=str), repairs) for v in item[0]]
        else:
            found.append(_call(item[0], item[1], repairs))
    if len(found) > 1:
        repairs.append(Repair("several_calls", f"{len(found)} calls in one block"))
    return found


def _call(data: Any, raw: str, repairs: list[Repair]) -> ToolCall | BadCall:
    if not isinstance(data, dict):
        return BadCall(raw, "tool call is not a JSON object")
    args = data.get("arguments", data.get("parameters"))
    return _checked(data.get("name"), args, raw, repairs, encoded=False)


def _checked(name: Any, args: Any, raw: str, repairs: list[Repair], encoded: bool) -> ToolCall | BadCall:
    """The one check and repair of a call's name and arguments, for text and native calls."""
    if not isinstance(name, str) or not name.strip():
        return BadCall(raw, "tool call has no 'name'")
    if args is None:
        if not encoded:
            repairs.append(Repair("missing_arguments"))
        args = {}
    for layer in range(3):  # a string is decoded: once for native calls, more is a repair
        if not isinstance(args, str):
            break
        if layer or not encoded:
            repairs.append(Repair("arguments_string"))
        if not args.strip():
            args = {}
            break
        try:
            args, fixes = _loads(args)
        except ValueError:
            native = encoded and not layer
            return BadCall(raw, "arguments are not JSON" if native else
                           "'arguments' is a string that is not JSON", name=name.strip())
        repairs += fixes
    if not isinstance(args, dict):
        return BadCall(raw, "'arguments' is not an object", name=name.strip())
    return ToolCall(name.strip(), args)

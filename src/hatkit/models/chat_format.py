"""Token ids for a chat, message by message, from a tokenizer's own chat template.

Each new message is encoded as the difference between the template rendered with and
without it, so the ids a trace records are exactly the ids fed, and ids the model generated
are never re-encoded. That rendering keeps only the first message and the last few before
the new one (when a probe shows the template gives the same text), so a conversation of N
messages costs O(N) template work, not O(N^2).

Every message but the harness's system prompt has special-token strings broken up first, so
no text can smuggle in `<|im_start|>system` markup: viewer messages, tool outputs, and
assistant turns a client replays as history. The model's own sampled turns are rendered that
way too, harmlessly: their ids come from sampling, and rendering only finds where the next
message starts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .base import ChatMessage, ToolCall

ZWSP = "\u200b"
WINDOW = 2
"""Messages before a new one (besides the first) that are rendered to find its ids."""
_WINDOW_OK: dict[tuple[str, bool], bool] = {}
"""Probe results per (chat template, native tools)."""


class ChatTemplateFormat:
    def __init__(self, tokenizer: Any, native_tools: bool) -> None:
        if not getattr(tokenizer, "chat_template", None):
            raise ValueError("the tokenizer has no chat template")
        self.tok = tokenizer
        self.native_tools = native_tools
        self.eos_id: int = int(tokenizer.eos_token_id)
        specials = set(getattr(tokenizer, "all_special_tokens", []) or [])
        specials |= {str(t) for t in getattr(tokenizer, "added_tokens_decoder", {}).values()}
        self._specials = sorted((s for s in specials if len(s) > 1), key=len, reverse=True)
        self._suffix = self._after_generation_suffix()
        key = (str(tokenizer.chat_template), native_tools)
        if key not in _WINDOW_OK:
            _WINDOW_OK[key] = self._window_is_exact()
        self.windowed = _WINDOW_OK[key]
        """Whether message ids come from a window of the conversation (else from all of it)."""

    # -- rendering --
    def _neutralise(self, text: str) -> str:
        for s in self._specials:
            if s in text:
                text = text.replace(s, s[0] + ZWSP + s[1:])
        return text

    def _template_messages(self, messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in messages:
            content = m.content if m.role == "system" else self._neutralise(m.content)
            if m.role == "tool" and not self.native_tools:
                out.append({"role": "user",
                            "content": f"<tool_response>\n{content}\n</tool_response>"})
            elif m.role == "assistant" and m.tool_calls and self.native_tools:
                out.append({"role": "assistant", "content": content, "tool_calls": [
                    {"type": "function", "id": c.id,
                     "function": {"name": c.name, "arguments": dict(c.arguments)}}
                    for c in m.tool_calls]})
            elif m.role == "tool":
                out.append({"role": "tool", "content": content, "name": m.name or "",
                            "tool_call_id": m.tool_call_id or ""})
            else:
                out.append({"role": m.role, "content": content})
        return out

    def render(self, messages: Sequence[ChatMessage], tools: Sequence[Mapping[str, Any]],
               add_generation_prompt: bool = False) -> str:
        text = self.tok.apply_chat_template(
            self._template_messages(messages), tools=list(tools) if self.native_tools and tools else None,
            add_generation_prompt=add_generation_prompt, tokenize=False)
        return str(text)

    def encode(self, text: str) -> list[int]:
        return list(self.tok(text, add_special_tokens=False)["input_ids"])

    # -- TokenFormat --
    def prefix_ids(self, system: ChatMessage, tools: Sequence[Mapping[str, Any]]) -> list[int]:
        return self.encode(self.render([system], tools))

    def message_ids(self, history: Sequence[ChatMessage], message: ChatMessage,
                    tools: Sequence[Mapping[str, Any]]) -> list[int]:
        return self.encode(self._added_text(self._window(history), message, tools))

    def generation_prompt_ids(self, history: Sequence[ChatMessage],
                              tools: Sequence[Mapping[str, Any]]) -> list[int]:
        return self.encode(self._added_text(self._window(history), None, tools))

    def _added_text(self, history: Sequence[ChatMessage], message: ChatMessage | None,
                    tools: Sequence[Mapping[str, Any]]) -> str:
        """What `message` (None: the generation prompt) adds to the rendered `history`."""
        before = self.render(history, tools)
        after = (self.render(history, tools, add_generation_prompt=True) if message is None
                 else self.render([*history, message], tools))
        return after[_common_prefix(before, after):]

    def _window(self, history: Sequence[ChatMessage]) -> Sequence[ChatMessage]:
        return _window(history) if self.windowed else history

    def _window_is_exact(self) -> bool:
        """Whether windowed rendering adds the same text as full rendering at every step of
        sample conversations that the full template accepts (it may reject, e.g., roles that
        do not alternate). Templates that number turns or look far back fail this."""
        for convo in _probe_conversations():
            for history, message in ((convo[:i], m) for i in range(1, len(convo))
                                     for m in (convo[i], None)):
                try:
                    full = self._added_text(history, message, [])
                except Exception:  # noqa: BLE001 - the template refuses this conversation
                    break
                try:
                    if self._added_text(_window(history), message, []) != full:
                        return False
                except Exception:  # noqa: BLE001 - it refuses the window: not exact
                    return False
        return True

    def after_generation_ids(self) -> list[int]:
        """Markup the template puts after the end-of-turn token (ChatML: a newline)."""
        return self.encode(self._suffix) if self._suffix else []

    def end_of_turn_ids(self) -> list[int]:
        return [self.eos_id]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tok.decode(list(ids), skip_special_tokens=False))

    def decode_pieces(self, ids: Sequence[int]) -> list[str]:
        """Text added by each token, so that ''.join(pieces) == decode(ids). A token that
        ends inside a multi-byte character adds "" and the one completing it adds the whole
        character (partial bytes decode to U+FFFD, which the next decode takes back)."""
        pieces, prev = [], ""
        for i in range(len(ids)):
            cur = self.decode(ids[: i + 1])
            if cur.endswith("\ufffd") and i + 1 < len(ids):
                pieces.append("")
                continue
            pieces.append(cur[len(prev):] if cur.startswith(prev) else cur[len(_common(prev, cur)):])
            prev = cur
        return pieces

    def _after_generation_suffix(self) -> str:
        marker = "HATKIT_MARKER_42"
        eos = self.tok.decode([self.eos_id], skip_special_tokens=False)
        text = self.render([ChatMessage("user", "hi"), ChatMessage("assistant", marker)], [])
        tail = text[text.rfind(marker) + len(marker):]
        return tail[len(eos):] if tail.startswith(eos) else ""


def _window(history: Sequence[ChatMessage]) -> Sequence[ChatMessage]:
    """The first message and the last WINDOW or so. An even number of messages is dropped,
    so each kept message keeps its position's parity (templates check role alternation)."""
    drop = max(0, len(history) - 1 - WINDOW)
    drop -= drop % 2
    return [history[0], *history[1 + drop:]] if drop else history


def _probe_conversations() -> list[list[ChatMessage]]:
    """A plain alternating chat, and one with a tool call answered by two results."""
    system = ChatMessage("system", "S")
    plain = [system]
    for i in range(4):
        plain += [ChatMessage("user", f"u{i}"), ChatMessage("assistant", f"a{i}")]
    call = ToolCall("t", {"x": 1}, "c1")
    tools = [system, ChatMessage("user", "u"), ChatMessage("assistant", "a"),
             ChatMessage("user", "u"),
             ChatMessage("assistant", '<tool_call>{"name": "t"}</tool_call>', (call,), True),
             ChatMessage("tool", "r1", tool_call_id="c1", name="t"),
             ChatMessage("tool", "r2", tool_call_id="c1", name="t"),
             ChatMessage("assistant", "a"), ChatMessage("user", "u"), ChatMessage("assistant", "a")]
    return [plain, tools]


def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _common(a: str, b: str) -> str:
    return a[: _common_prefix(a, b)]


def tool_result_text(payload: Any) -> str:
    """How a tool result is written for the model: compact JSON."""
    return json.dumps(payload, ensure_ascii=False, separators=(", ", ": "), default=str)

"""Token ids for a chat, message by message, from a tokenizer's own chat template.

Each new message is encoded as the difference between the template rendered with and
without it, so the ids a trace records are exactly the ids fed, and ids the model generated
are never re-encoded. Untrusted content (viewer messages, tool outputs) has special-token
strings broken up first, so a message cannot smuggle in `<|im_start|>system` markup.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .base import ChatMessage

ZWSP = "\u200b"


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

    # -- rendering --
    def _neutralise(self, text: str) -> str:
        for s in self._specials:
            if s in text:
                text = text.replace(s, s[0] + ZWSP + s[1:])
        return text

    def _template_messages(self, messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for m in messages:
            untrusted = m.role in ("user", "tool")
            content = self._neutralise(m.content) if untrusted else m.content
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
        before = self.render(history, tools)
        after = self.render([*history, message], tools)
        return self.encode(after[_common_prefix(before, after):])

    def generation_prompt_ids(self, history: Sequence[ChatMessage],
                              tools: Sequence[Mapping[str, Any]]) -> list[int]:
        plain = self.render(history, tools)
        prompted = self.render(history, tools, add_generation_prompt=True)
        return self.encode(prompted[_common_prefix(plain, prompted):])

    def after_generation_ids(self) -> list[int]:
        """Markup the template puts after the end-of-turn token (ChatML: a newline)."""
        return self.encode(self._suffix) if self._suffix else []

    def end_of_turn_ids(self) -> list[int]:
        return [self.eos_id]

    def decode(self, ids: Sequence[int]) -> str:
        return str(self.tok.decode(list(ids), skip_special_tokens=False))

    def decode_pieces(self, ids: Sequence[int]) -> list[str]:
        """Text added by each token, so that ''.join(pieces) == decode(ids)."""
        pieces, prev = [], ""
        for i in range(len(ids)):
            cur = self.decode(ids[: i + 1])
            pieces.append(cur[len(prev):] if cur.startswith(prev) else cur[len(_common(prev, cur)):])
            prev = cur
        return pieces

    def _after_generation_suffix(self) -> str:
        marker = "HATKIT_MARKER_42"
        eos = self.tok.decode([self.eos_id], skip_special_tokens=False)
        text = self.render([ChatMessage("user", "hi"), ChatMessage("assistant", marker)], [])
        tail = text[text.rfind(marker) + len(marker):]
        return tail[len(eos):] if tail.startswith(eos) else ""


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

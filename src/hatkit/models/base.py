"""The one protocol every model backend speaks, and the data it exchanges with the loop.

Messages use the OpenAI chat shape (role, content, tool_calls) so an HTTP backend can send
them as they are; a local backend also receives the exact prompt token ids the loop keeps,
so what the model saw is never re-derived from text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from .errors import ModelError

Role = Literal["system", "user", "assistant", "tool"]
FinishReason = Literal["stop", "length", "tool_calls", "error"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call in hatkit's internal form, whatever the backend produced."""

    name: str
    arguments: Mapping[str, Any]
    id: str = ""

    def to_openai(self) -> dict[str, Any]:
        import json

        return {"id": self.id, "type": "function",
                "function": {"name": self.name, "arguments": json.dumps(dict(self.arguments),
                                                                         ensure_ascii=False)}}


@dataclass(frozen=True)
class ChatMessage:
    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    """Tool calls the model made in this (assistant) message."""
    native_tool_calls: bool = False
    """True when the backend returned structured tool calls; False when they are written in
    the content as <tool_call> text (then results go back as <tool_response> text)."""
    tool_call_id: str | None = None
    name: str | None = None
    """Tool name, for role 'tool'."""


@dataclass(frozen=True)
class ModelRequest:
    messages: Sequence[ChatMessage]
    tools: Sequence[Mapping[str, Any]] = ()
    """OpenAI function schemas; a backend with native tools passes them on."""
    prompt_ids: Sequence[int] | None = None
    """Exact prompt token ids (local backends), kept by the loop from the trace."""
    prefix_len: int = 0
    """How many leading prompt ids are the shared harness prefix (prefix caching)."""
    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    stop: Sequence[str] = ()
    """Stop after any of these strings (kept in the output)."""
    logprobs: bool = False


@dataclass
class ModelOutput:
    text: str
    tool_calls: list[ToolCall] = field(default_factory=list)
    """Structured calls from a backend with native tools (empty for text protocols)."""
    token_ids: list[int] | None = None
    """Generated ids exactly as sampled (local backends)."""
    logprobs: list[float] | None = None
    finish_reason: FinishReason = "stop"
    prompt_tokens: int = 0
    completion_tokens: int = 0
    ttft_s: float = 0.0
    total_s: float = 0.0
    error: ModelError | None = None
    """Set when the backend failed on this request; the loop records its kind and ends the
    episode with the fallback. Only a `ModelError` may be reported this way."""

    @classmethod
    def failed(cls, error: ModelError, total_s: float = 0.0) -> ModelOutput:
        """The output of a request the backend could not serve."""
        return cls("", finish_reason="error", error=error, ttft_s=total_s, total_s=total_s)


class TokenFormat(Protocol):
    """Turns chat messages into prompt token ids for a tokenizer-level backend."""

    eos_id: int
    """The end-of-turn token the model emits to finish a message."""

    def decode(self, ids: Sequence[int]) -> str: ...

    def encode(self, text: str) -> list[int]: ...

    def prefix_ids(self, system: ChatMessage, tools: Sequence[Mapping[str, Any]]) -> list[int]: ...

    def message_ids(self, history: Sequence[ChatMessage], message: ChatMessage,
                    tools: Sequence[Mapping[str, Any]]) -> list[int]: ...

    def generation_prompt_ids(self, history: Sequence[ChatMessage],
                              tools: Sequence[Mapping[str, Any]]) -> list[int]: ...

    def after_generation_ids(self) -> list[int]: ...

    def decode_pieces(self, ids: Sequence[int]) -> list[str]: ...


@runtime_checkable
class ChatModel(Protocol):
    """What the agent loop needs from any backend."""

    model_id: str
    native_tools: bool
    """True: tool schemas go to the backend (chat template / API); the harness then does not
    describe tools in the system prompt."""

    def token_format(self) -> TokenFormat | None:
        """Token-level formatting for backends that expose token ids; None otherwise."""
        ...

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        """One output per request; a batch lets a backend decode episodes together."""
        ...

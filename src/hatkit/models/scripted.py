"""A model that returns queued outputs, for tests and demos of the loop's control flow.

It ships inside the package so users can test their own harness hooks and tools without a
model: queue text (tool calls written as <tool_call> tags, malformed calls included), full
ModelOutput objects, or functions of the request.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .base import ModelOutput, ModelRequest, ToolCall
from .errors import ScriptExhausted

Scripted = str | ModelOutput | Callable[[ModelRequest], "str | ModelOutput"]


class ScriptedModel:
    model_id = "scripted"

    def __init__(self, outputs: Iterable[Scripted] = (), native_tools: bool = False) -> None:
        self.queue: deque[Scripted] = deque(outputs)
        self.native_tools = native_tools
        self.requests: list[ModelRequest] = []
        """Every request received, for assertions."""

    def token_format(self) -> None:
        return None

    def push(self, *outputs: Scripted) -> ScriptedModel:
        self.queue.extend(outputs)
        return self

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        results = []
        for req in requests:
            self.requests.append(req)
            if not self.queue:
                results.append(ModelOutput.failed(ScriptExhausted("ScriptedModel: script exhausted")))
                continue
            item = self.queue.popleft()
            value = item(req) if callable(item) else item
            results.append(value if isinstance(value, ModelOutput) else ModelOutput(value))
        return results

    # -- helpers to write scripts --
    @staticmethod
    def call(name: str, think: str = "", **arguments: Any) -> str:
        """Text of one well-formed tool call, optionally preceded by reasoning."""
        body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        prefix = f"<think>{think}</think>\n" if think else ""
        return f"{prefix}<tool_call>\n{body}\n</tool_call>"

    @staticmethod
    def native_call(name: str, call_id: str = "call_0", **arguments: Any) -> ModelOutput:
        """A structured tool call, as an OpenAI-compatible server returns it."""
        return ModelOutput("", tool_calls=[ToolCall(name, arguments, call_id)],
                           finish_reason="tool_calls")

"""Helpers of the server tests: a loopback uvicorn in a thread and slow scripted models."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from fastapi import FastAPI

from hatkit.models.base import ModelOutput, ModelRequest
from hatkit.models.chat_format import ChatTemplateFormat
from hatkit.models.scripted import ScriptedModel
from hatkit.sim.tool_server import running_app
from tiny import tiny_tokenizer


class SlowModel(ScriptedModel):
    """A ScriptedModel that takes `delay` seconds per generate call (one batch)."""

    def __init__(self, respond: Callable[[ModelRequest], str], delay: float = 0.0,
                 n: int = 1000) -> None:
        super().__init__([respond] * n)
        self.delay = delay

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        if self.delay:
            time.sleep(self.delay)
        return super().generate(requests)


def last_user(req: ModelRequest) -> str:
    return next(m.content for m in reversed(req.messages) if m.role == "user")


def echo(req: ModelRequest) -> str:
    return f"You said: {last_user(req)}"


def running(app: FastAPI) -> AbstractContextManager[str]:
    """The app on loopback in a thread (the same helper the tool server uses)."""
    return running_app(app)




class DripModel(ScriptedModel):
    """A text backend that streams: each word of the scripted text reaches the request's
    sink `delay` seconds after the previous one (like a model decoding), then returns."""

    def __init__(self, respond: Callable[[ModelRequest], str], delay: float = 0.05) -> None:
        super().__init__([respond] * 1000)
        self.delay = delay
        self.finished_at: list[float] = []
        """time.monotonic() at the end of each generate call."""

    def generate(self, requests: Sequence[ModelRequest],
                 streams: Sequence[Callable[[str], None] | None] | None = None) -> list[ModelOutput]:
        outs = super().generate(requests)
        for i, out in enumerate(outs):
            sink = streams[i] if streams else None
            for piece in re.findall(r"\s*\S+", out.text):
                time.sleep(self.delay)
                if sink is not None:
                    sink(piece)
        self.finished_at.append(time.monotonic())
        return outs


def sse_chunks(url: str, body: dict[str, object]) -> tuple[int, list[tuple[float, dict[str, object]]]]:
    """POST a streamed chat completion; (status, [(arrival time, parsed event), ...])."""
    import json

    import httpx

    events: list[tuple[float, dict[str, object]]] = []
    with httpx.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True},
                      timeout=20) as r:
        if r.status_code != 200:
            r.read()
            return r.status_code, [(time.monotonic(), r.json())]
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: [DONE]":
                events.append((time.monotonic(), json.loads(line[6:])))
    return 200, events


class TokenModel(ScriptedModel):
    """A token-level backend (the tiny test tokenizer's chat template) that replies with
    scripted text, like LocalModel does: it sees prompt ids and returns token ids."""

    def __init__(self, respond: Callable[[ModelRequest], str],
                 context_tokens: int | None = None) -> None:
        super().__init__([respond] * 1000)
        self.fmt = ChatTemplateFormat(tiny_tokenizer(), native_tools=False)
        if context_tokens is not None:
            self.context_tokens = context_tokens

    def token_format(self) -> ChatTemplateFormat:  # type: ignore[override]
        return self.fmt

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        outs = super().generate(requests)
        for out in outs:
            out.token_ids = [*self.fmt.encode(out.text), self.fmt.eos_id]
        return outs

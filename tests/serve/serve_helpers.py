"""Helpers of the server tests: a loopback uvicorn in a thread and slow scripted models."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager

from fastapi import FastAPI

from hatkit.models.base import ModelOutput, ModelRequest
from hatkit.models.scripted import ScriptedModel
from hatkit.sim.tool_server import running_app


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



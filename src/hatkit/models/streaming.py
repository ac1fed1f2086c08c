"""Streaming text out of a decoder: token ids in, text deltas to a sink (local backends)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

TextSink = Callable[[str], None]
"""Receives a request's generated text piece by piece (end-of-turn token left out)."""


def stop_reached(text: str, stops: Sequence[str]) -> bool:
    """Whether a stop string ends within the last piece of `text`, checked after each token
    (only the tail is searched, so a long reply costs no more per token than a short one)."""
    return any(s in text[-(len(s) + 16):] for s in stops)


class StreamDetokenizer:
    """Token ids -> text deltas; waits while the text ends in a partial UTF-8 character."""

    def __init__(self, tok: Any, eos_id: int, sink: TextSink) -> None:
        self.tok, self.eos_id, self.sink = tok, eos_id, sink
        self.ids: list[int] = []
        self.sent = ""

    def push(self, token: int) -> None:
        if token == self.eos_id:
            return
        self.ids.append(token)
        text = str(self.tok.decode(self.ids, skip_special_tokens=False))
        if text.endswith("\ufffd"):
            return
        delta = text[len(self.sent):] if text.startswith(self.sent) else ""
        self.sent = text
        if delta:
            self.sink(delta)

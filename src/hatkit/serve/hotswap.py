"""The harness slot: which harness serves new requests, swapped atomically.

Each request captures the slot's current Agent when it starts and finishes on it, so a swap
never cuts a request in flight. Agents are built once per harness version (content hash).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..agent import Agent
from ..harness import Harness


@dataclass(frozen=True)
class Release:
    label: str
    harness: Harness
    agent: Agent


class UnknownHarness(KeyError):
    """A harness label that the server was not given."""


class HarnessSlot:
    def __init__(self, initial: Harness, make_agent: Callable[[Harness], Agent],
                 harnesses: Mapping[str, Harness] | None = None) -> None:
        self._lock = threading.Lock()
        self._make_agent = make_agent
        self._agents: dict[str, Agent] = {}
        self.harnesses: dict[str, Harness] = dict(harnesses or {})
        label = self._label_for(initial)
        self._current = Release(label, initial, self._agent_for(initial))
        self.history: list[dict[str, Any]] = [self._entry(self._current)]

    def _label_for(self, harness: Harness) -> str:
        for label, h in self.harnesses.items():
            if h.content_hash == harness.content_hash:
                return label
        label = harness.name if harness.name not in self.harnesses else f"{harness.name}@{harness.short_hash}"
        self.harnesses[label] = harness
        return label

    def _agent_for(self, harness: Harness) -> Agent:
        agent = self._agents.get(harness.content_hash)
        if agent is None:
            agent = self._agents[harness.content_hash] = self._make_agent(harness)
        return agent

    @staticmethod
    def _entry(r: Release) -> dict[str, Any]:
        return {"label": r.label, "name": r.harness.name, "harness_hash": r.harness.content_hash,
                "since": time.time()}

    @property
    def current(self) -> Release:
        return self._current  # one attribute read: atomic

    def resolve(self, label: str | None) -> Release:
        """The release for a request: the current one, or the named harness (404 if unknown)."""
        if label is None:
            return self._current
        with self._lock:
            h = self.harnesses.get(label)
            if h is None:
                raise UnknownHarness(label)
            return Release(label, h, self._agent_for(h))

    def swap(self, harness: Harness | str) -> Release:
        """Serve new requests with `harness` (a label in `harnesses`, or a Harness)."""
        with self._lock:
            if isinstance(harness, str):
                if harness not in self.harnesses:
                    raise UnknownHarness(harness)
                label, h = harness, self.harnesses[harness]
            else:
                label, h = self._label_for(harness), harness
            release = Release(label, h, self._agent_for(h))  # build before switching
            self._current = release
            self.history.append(self._entry(release))
            return release

    def describe(self) -> dict[str, Any]:
        cur = self._current
        return {"current": {"label": cur.label, "name": cur.harness.name,
                            "harness_hash": cur.harness.content_hash},
                "available": {k: h.content_hash for k, h in self.harnesses.items()},
                "history": list(self.history)}

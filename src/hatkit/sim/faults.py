"""Sandboxed tool execution with deterministic fault injection.

`FaultInjectingRunner(config, inner)` wraps any ToolRunner and, per tool call, may inject one
of six faults. Error faults (`timeout`, `permission_denied`, `server_error`) raise before
the tool runs, so they have no side effects. Output faults (`malformed`, `truncated`,
`empty`) run the real tool first, write tools included: the write happens and only its
answer is lost or broken, as when a response is cut in transit. A model that retries a
write after such a fault writes twice, and the trace shows it.

**Determinism.** Whether a call gets a fault depends only on (config.seed, episode key,
index of the call within its episode, tool name), never on global call order, so episodes
run concurrently or in any order get the same faults. The episode of a call is found from
its `ToolContext.state` object (one per episode), and the episode key of a state is, first
match wins:

1. the key given with `runner.seed_episode(state, key)` (call it before the episode's first
   tool call; the simulation runner passes its question/harness/seed key), or given by a
   factory from `runner.state_factory(source)`, which numbers states in creation order
   (`Agent.run_many` creates episode i's state i-th, so keys follow episode order);
2. a string attribute `state.episode_key`;
3. otherwise the order in which the runner first sees the state (`seen-0`, `seen-1`, ...).
   That is deterministic only when tool calls happen in a deterministic order; concurrent
   runs should use 1.

`runner.for_episode(key)` gives a runner bound to one episode whatever the state (the tool
server uses one per session). A runner's bookkeeping (call counter, faults so far,
attempted calls) is per episode and dropped when the state is garbage-collected, so no fault
decision leaks from one episode into another. A harness without state (None) gives no
per-episode object to key by: all its episodes share one bookkeeping; use `for_episode`.

**Sandboxing.** `sandboxed_state_factory(source)` gives every episode its own state (for
live_commerce a ShopState copy sharing only the immutable catalog): writes such as
apply_coupon and escalate_to_human stay in the episode that made them.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import threading
import weakref
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..agent.errors import AgentError, InjectedOutput, PermissionDenied, ServerError, ToolTimeout
from ..agent.tool_runner import ThreadToolRunner, ToolRunner
from ..harness import Harness, ToolContext, ToolSpec
from ..models.chat_format import tool_result_text

FaultKind = Literal["timeout", "malformed", "truncated", "permission_denied", "empty", "server_error"]
FAULT_KINDS: tuple[FaultKind, ...] = get_args(FaultKind)
"""In the order the decision walks the cumulative rates (fixed: changing it changes faults)."""
ERROR_FAULTS = frozenset({"timeout", "permission_denied", "server_error"})
TRUNCATE_AT = 0.4
MALFORMED_TAIL = ' ,,"<!-- upstream connection reset -->'


class FaultConfigError(ValueError):
    """A fault config file that cannot be loaded; the message names file and line."""


class FaultConfig(BaseModel):
    """Which faults to inject, how often, and where."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rates: dict[FaultKind, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(default_factory=dict)
    """Probability per tool call of each fault kind; their sum is at most 1."""
    seed: int = 0
    """Seeds every decision; the same seed and episode keys give the same faults."""
    tools: list[str] | None = None
    """Only calls of these tools (names as the model sees them) get faults; None = all tools."""
    max_per_episode: int | None = Field(default=None, ge=0)
    """At most this many faults in one episode; None = no cap."""
    first_call_only: bool = False
    """Inject only on the first attempt of a (tool, arguments) pair, so an identical retry
    succeeds: for oracle-recovery tests and SFT data that teaches retrying."""

    @model_validator(mode="after")
    def _rates_sum(self) -> FaultConfig:
        total = sum(self.rates.values())
        if total > 1.0 + 1e-9:
            raise ValueError(f"fault rates sum to {total:g}; at most 1 is possible")
        return self

    @property
    def active(self) -> bool:
        return any(r > 0 for r in self.rates.values()) and self.max_per_episode != 0

    @classmethod
    def from_file(cls, path: Path | str) -> FaultConfig:
        """Load a YAML or JSON file; errors read `file:line: field: message`."""
        from ..harness.yaml_lines import YamlSyntaxError, line_for, load_with_lines

        path = Path(path)
        try:
            data, lines = load_with_lines(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise FaultConfigError(f"{path}: cannot read ({exc.strerror})") from None
        except YamlSyntaxError as exc:
            raise FaultConfigError(f"{path}:{exc.line or 1}: {exc}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise FaultConfigError(f"{path}:1: expected a mapping of fault settings")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            msgs = []
            for e in exc.errors():
                loc = tuple(e["loc"])
                where = ".".join(map(str, loc)) or "config"
                msgs.append(f"{path}:{line_for(lines, loc) or 1}: {where}: {e['msg']}")
            raise FaultConfigError("\n".join(msgs)) from None


def decide(config: FaultConfig, episode_key: str, index: int, tool: str) -> FaultKind | None:
    """The fault (or None) for call `index` (0-based) of episode `episode_key` to `tool`,
    before the per-episode cap and first-call rule. A pure function of its arguments."""
    if config.tools is not None and tool not in config.tools:
        return None
    digest = hashlib.blake2b(f"{config.seed}\x1f{episode_key}\x1f{index}\x1f{tool}".encode(),
                             digest_size=8).digest()
    u = int.from_bytes(digest, "big") / 2.0**64
    acc = 0.0
    for kind in FAULT_KINDS:
        acc += config.rates.get(kind, 0.0)
        if u < acc:
            return kind
    return None


# -- what a faulty output looks like -------------------------------------------------------

def malformed_text(text: str) -> str:
    """Broken JSON: the last character (a closing brace for an object) dropped and garbage
    appended. Never parses: after a complete value any garbage is extra data."""
    return text[:-1] + MALFORMED_TAIL


def truncated_text(text: str) -> str:
    """The first ~40% of the output (a prefix; unparsable for object and array outputs)."""
    return text[:max(1, int(len(text) * TRUNCATE_AT))]


def empty_text(result: Any) -> str:
    """An empty value of the real result's JSON type."""
    if isinstance(result, Mapping):
        return "{}"
    if isinstance(result, list | tuple):
        return "[]"
    return '""' if isinstance(result, str) else "null"


def injected_error(fault: str, tool: str, timeout_s: float) -> AgentError:
    """The exception an error fault raises, marked injected."""
    err: AgentError
    if fault == "timeout":
        err = ToolTimeout(f"'{tool}' did not answer within {timeout_s:g} s "
                          "(injected: simulated timeout)")
    elif fault == "permission_denied":
        err = PermissionDenied(f"'{tool}': 403 Forbidden, the tool backend refused the call "
                               "(injected: simulated permission denial)")
    else:
        err = ServerError("503 Service Unavailable (transient)")
    err.injected = True
    return err


# -- per-episode bookkeeping ----------------------------------------------------------------

@dataclass
class _Episode:
    key: str
    calls: int = 0
    injected: int = 0
    attempted: set[str] = field(default_factory=set)


class FaultInjectingRunner:
    """A ToolRunner that runs tools through `inner` and injects the faults of `config`."""

    def __init__(self, config: FaultConfig, inner: ToolRunner | None = None, *,
                 max_untracked: int = 4096) -> None:
        self.config = config
        self.inner: ToolRunner = inner or ThreadToolRunner()
        self.injected: Counter[str] = Counter()
        """Faults injected so far by kind, over all episodes (for reports)."""
        self._lock = threading.Lock()
        self._episodes: dict[int, tuple[Callable[[], Any], _Episode]] = {}
        self._strong: list[int] = []
        """ids of states that cannot be weakly referenced (kept alive, oldest first)."""
        self._max_strong = max_untracked
        self._seen = itertools.count()

    # -- episode keys --
    def seed_episode(self, state: Any, key: str) -> None:
        """Key the episode that runs on `state` (resets its bookkeeping)."""
        with self._lock:
            self._track(state, _Episode(str(key)))

    def state_factory(self, source: Harness | Callable[[], Any] | Any, *,
                      prefix: str = "episode-") -> Callable[[], Any]:
        """A sandboxed state factory whose states are keyed `prefix0`, `prefix1`, ... in the
        order they are made (per factory): `Agent(..., tool_runner=runner,
        state_factory=runner.state_factory(harness))`."""
        make = sandboxed_state_factory(source)
        numbers = itertools.count()

        def factory() -> Any:
            state = make()
            self.seed_episode(state, f"{prefix}{next(numbers)}")
            return state

        return factory

    def for_episode(self, key: str) -> ToolRunner:
        """A runner for one episode, keyed `key` whatever state its calls carry."""
        return _BoundRunner(self, _Episode(str(key)))

    def episode_key(self, state: Any) -> str:
        """The key the runner uses (or will use) for the episode of `state`."""
        with self._lock:
            return self._lookup(state).key

    # -- running --
    def run(self, spec: ToolSpec, arguments: Mapping[str, Any], context: ToolContext,
            timeout_s: float) -> Any:
        with self._lock:
            episode = self._lookup(context.state)
        return self._run(episode, spec, arguments, context, timeout_s)

    def _run(self, episode: _Episode, spec: ToolSpec, arguments: Mapping[str, Any],
             context: ToolContext, timeout_s: float) -> Any:
        with self._lock:
            fault = self._next_fault(episode, spec.name, arguments)
            if fault in ERROR_FAULTS:
                self._count(episode, fault)
        if fault is None:
            return self.inner.run(spec, arguments, context, timeout_s)
        if fault in ERROR_FAULTS:
            raise injected_error(fault, spec.name, timeout_s)
        result = self.inner.run(spec, arguments, context, timeout_s)  # real errors win
        if isinstance(result, InjectedOutput):  # an inner injector already broke it
            return result
        with self._lock:
            self._count(episode, fault)
        if fault == "empty":
            return InjectedOutput(empty_text(result), fault)
        text = tool_result_text(result)
        return InjectedOutput(malformed_text(text) if fault == "malformed" else truncated_text(text),
                              fault)

    def _next_fault(self, episode: _Episode, tool: str, arguments: Mapping[str, Any]) -> FaultKind | None:
        index = episode.calls
        episode.calls += 1
        cfg = self.config
        if not cfg.active or (cfg.max_per_episode is not None and episode.injected >= cfg.max_per_episode):
            return None
        if cfg.first_call_only:
            signature = json.dumps([tool, dict(arguments)], sort_keys=True, default=str)
            if signature in episode.attempted:
                return None
            episode.attempted.add(signature)
        return decide(cfg, episode.key, index, tool)

    def _count(self, episode: _Episode, fault: str) -> None:
        episode.injected += 1
        self.injected[fault] += 1

    # -- state -> episode (call with the lock held) --
    def _lookup(self, state: Any) -> _Episode:
        entry = self._episodes.get(id(state))
        if entry is not None and entry[0]() is state:
            return entry[1]
        key = getattr(state, "episode_key", None)
        return self._track(state, _Episode(key if isinstance(key, str) else f"seen-{next(self._seen)}"))

    def _track(self, state: Any, episode: _Episode) -> _Episode:
        sid = id(state)
        try:
            ref: Callable[[], Any] = weakref.ref(state, functools.partial(self._forget, sid))
        except TypeError:  # None, dicts, ...: keep it alive so its id is not reused
            ref = _Strong(state)
            if sid in self._strong:
                self._strong.remove(sid)
            self._strong.append(sid)
            if len(self._strong) > self._max_strong:
                self._episodes.pop(self._strong.pop(0), None)
        self._episodes[sid] = (ref, episode)
        return episode

    def _forget(self, sid: int, ref: Any) -> None:
        entry = self._episodes.get(sid)  # no lock: runs from the garbage collector
        if entry is not None and entry[0] is ref:
            self._episodes.pop(sid, None)


@dataclass(frozen=True)
class _Strong:
    obj: Any

    def __call__(self) -> Any:
        return self.obj


class _BoundRunner:
    """FaultInjectingRunner.for_episode: one episode's counter, independent of the state."""

    def __init__(self, parent: FaultInjectingRunner, episode: _Episode) -> None:
        self.parent = parent
        self.episode = episode

    @property
    def episode_key(self) -> str:
        return self.episode.key

    def run(self, spec: ToolSpec, arguments: Mapping[str, Any], context: ToolContext,
            timeout_s: float) -> Any:
        return self.parent._run(self.episode, spec, arguments, context, timeout_s)


def sandboxed_state_factory(source: Harness | Callable[[], Any] | Any) -> Callable[[], Any]:
    """A factory giving each episode its own state.

    `source` is a Harness (its declared state), a state factory (a class or function), or a
    template state object. When the state has a `.copy()` (ShopState does), one template is
    made once and every episode gets a copy of it, sharing only immutable parts (the
    catalog); otherwise every episode gets a freshly made state. Writes of one episode
    (applied coupons, escalations) are never seen by another.
    """
    if isinstance(source, Harness):
        make: Callable[[], Any] = source.new_state
    elif callable(source):
        make = source
    elif callable(getattr(source, "copy", None)):
        template = source
        if isinstance(template, dict | list | set):
            return lambda: copy.deepcopy(template)
        return lambda: template.copy()
    else:
        raise TypeError(f"cannot make per-episode states from {type(source).__name__}: give a "
                        "Harness, a factory, or a state with a copy() method")
    first = make()
    if isinstance(first, dict | list | set):  # builtin copy() is shallow
        return lambda: copy.deepcopy(first)
    if not callable(getattr(first, "copy", None)):
        return make
    return lambda: first.copy()

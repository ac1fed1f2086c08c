"""A sandbox tool server: a harness's tools over HTTP on loopback, one state per session.

An external agent (any language) creates a session, calls tools in it, and deletes it:

    GET    /healthz                          -> {"status": "ok", "harness", "harness_hash", "sessions"}
    GET    /tools                            -> {"harness", "harness_hash", "tools": [OpenAI schemas]}
    POST   /sessions   [{"episode_key": s}]  -> 201 {"session_id", "episode_key"}
    POST   /sessions/{id}/tools/{name}  {"arguments": {...}}
           -> {"output": result} | {"output_text": text, "fault": kind} (injected broken output)
              | {"error": {"type", "message", "injected"}} (tool failures are data, status 200)
    DELETE /sessions/{id}                    -> 204

Unknown session or tool: 404 with detail {"type", "message"}; a body that is not
{"arguments": object}: 422. Calls get the same checks as in process (`check_call`: argument
validation, permissions) and the harness's tool timeout. Sessions are kept in an LRU of
`max_sessions`, so memory stays bounded; an evicted session answers 404.

With `faults`, each session is one fault episode keyed by its `episode_key` (default
`session-<n>` in creation order): a client that passes the same keys as an in-process run
(`HttpToolRunner.state_factory()` and `FaultInjectingRunner.state_factory()` both number
`episode-0`, `episode-1`, ...) gets the same faults.

`HttpToolRunner` is the client side: a ToolRunner whose episode state is a `RemoteSession`,
so `Agent(harness, model, tool_runner=r, state_factory=r.state_factory())` runs its tools on
the server and writes traces like an in-process run.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI, HTTPException, Response
from fastapi.encoders import jsonable_encoder
from pydantic import BaseModel, ConfigDict

from ..agent.errors import ERROR_KINDS, AgentError, InjectedOutput, ToolException, ToolTimeout, UnknownTool
from ..agent.tool_runner import ThreadToolRunner, ToolRunner, check_call
from ..harness import Harness, ToolContext, ToolSpec
from .faults import FaultConfig, FaultInjectingRunner

ERROR_CLASSES: dict[str, type[AgentError]] = dict(ERROR_KINDS)


class CallBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    arguments: dict[str, Any]
    """The tool's arguments, as the model wrote them."""


class SessionBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    episode_key: str | None = None
    """Keys the session's fault decisions; default `session-<n>` in creation order."""


@dataclass
class _Session:
    state: Any
    runner: ToolRunner
    episode_key: str


class SessionStore:
    """Sessions by id, least recently used evicted beyond `max_sessions`; thread-safe."""

    def __init__(self, max_sessions: int = 1024) -> None:
        self.max_sessions = max_sessions
        self._items: OrderedDict[str, _Session] = OrderedDict()
        self._lock = threading.Lock()
        self._ids = itertools.count()

    def add(self, make: Callable[[int], _Session]) -> tuple[str, _Session]:
        with self._lock:
            n = next(self._ids)
            session = make(n)
            sid = f"s{n}-{secrets.token_hex(6)}"
            self._items[sid] = session
            while len(self._items) > self.max_sessions:
                self._items.popitem(last=False)
            return sid, session

    def get(self, sid: str) -> _Session | None:
        with self._lock:
            session = self._items.get(sid)
            if session is not None:
                self._items.move_to_end(sid)
            return session

    def delete(self, sid: str) -> bool:
        with self._lock:
            return self._items.pop(sid, None) is not None

    def __len__(self) -> int:
        return len(self._items)


def create_app(harness: Harness, faults: FaultConfig | None = None,
               permissions: Iterable[str] | None = None, *, max_sessions: int = 1024) -> FastAPI:
    """The server app for `harness`; `permissions` default to the harness's own."""
    perms = frozenset(harness.spec.permissions if permissions is None else permissions)
    tools: dict[str, ToolSpec] = {t.name: t for t in harness.runtime_tools()}
    timeout_s = harness.spec.limits.tool_timeout_s
    plain = ThreadToolRunner()
    injector = FaultInjectingRunner(faults, plain) if faults is not None else None
    sessions = SessionStore(max_sessions)
    app = FastAPI(title=f"hatkit tool server: {harness.name}")
    app.state.sessions = sessions
    app.state.harness = harness
    app.state.fault_runner = injector

    def new_session(n: int, key: str | None) -> _Session:
        key = key or f"session-{n}"
        runner = injector.for_episode(key) if injector is not None else plain
        return _Session(harness.new_state(), runner, key)

    def missing(kind: str, message: str) -> HTTPException:
        return HTTPException(404, detail={"type": kind, "message": message})

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {"status": "ok", "harness": harness.name, "harness_hash": harness.content_hash,
                "sessions": len(sessions)}

    @app.get("/tools")
    def list_tools() -> dict[str, Any]:
        return {"harness": harness.name, "harness_hash": harness.content_hash,
                "tools": [t.openai_schema() for t in tools.values()]}

    @app.post("/sessions", status_code=201)
    def create_session(body: SessionBody | None = None) -> dict[str, str]:
        key = body.episode_key if body is not None else None
        sid, session = sessions.add(lambda n: new_session(n, key))
        return {"session_id": sid, "episode_key": session.episode_key}

    @app.delete("/sessions/{session_id}", status_code=204)
    def delete_session(session_id: str) -> Response:
        if not sessions.delete(session_id):
            raise missing("unknown_session", f"no session '{session_id}'")
        return Response(status_code=204)

    @app.post("/sessions/{session_id}/tools/{name}")
    def call_tool(session_id: str, name: str, body: CallBody) -> dict[str, Any]:
        session = sessions.get(session_id)
        if session is None:
            raise missing("unknown_session", f"no session '{session_id}' (expired or deleted)")
        spec = tools.get(name)
        if spec is None:
            raise missing("unknown_tool", f"no tool named '{name}'; available: {', '.join(tools)}")
        try:
            args = check_call(spec, body.arguments, perms)
            result = session.runner.run(spec, args, ToolContext(session.state, harness.rules, perms),
                                        timeout_s)
        except AgentError as err:
            return {"error": {"type": err.kind, "message": str(err), "injected": err.injected}}
        if isinstance(result, InjectedOutput):
            return {"output_text": result.text, "fault": result.kind}
        return {"output": jsonable_encoder(result)}

    return app


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def serve(harness: Harness, host: str = "127.0.0.1", port: int = 8765,
          faults: FaultConfig | None = None, *, permissions: Iterable[str] | None = None,
          allow_remote: bool = False) -> None:
    """Run the server with uvicorn until interrupted. Binding beyond loopback exposes the
    tools (and any granted write permission) to the network, so it needs allow_remote=True."""
    if not is_loopback(host) and not allow_remote:
        raise ValueError(f"refusing to serve tools on non-loopback host '{host}'; "
                         "pass allow_remote=True if that is intended")
    import uvicorn

    uvicorn.run(create_app(harness, faults, permissions), host=host, port=port, log_level="warning")


@contextmanager
def running_app(app: Any) -> Iterator[str]:
    """Any ASGI app under uvicorn on 127.0.0.1 (an OS-chosen port) in a background thread;
    yields its base URL and stops it on exit. For tests, benchmarks and notebooks."""
    import socket
    import threading
    import time

    import uvicorn

    # the socket must say TCP: asyncio sets TCP_NODELAY only then (else ~40 ms per request)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextmanager
def running_server(harness: Harness, faults: FaultConfig | None = None, *,
                   permissions: Iterable[str] | None = None) -> Iterator[str]:
    """The sandbox tool server on loopback in a background thread; yields its base URL."""
    with running_app(create_app(harness, faults, permissions)) as url:
        yield url


# -- client -------------------------------------------------------------------------------

@dataclass
class RemoteSession:
    """The state of an episode whose tools run on a tool server. The server session is
    created on the first tool call, so making the state never touches the network."""

    episode_key: str | None = None
    session_id: str | None = None


class HttpToolRunner:
    """A ToolRunner that calls a tool server. Episode states must be RemoteSessions (use
    `state_factory()`); server replies map back to the same AgentError subclasses and
    InjectedOutputs as an in-process run, so traces look the same."""

    def __init__(self, base_url: str, client: httpx.Client | None = None,
                 timeout_s: float = 10.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.client = client or httpx.Client()
        self._own_client = client is None
        self.timeout_s = timeout_s
        """Seconds allowed for the network and the server on top of a tool's own timeout."""
        self._lock = threading.Lock()

    def state_factory(self, prefix: str = "episode-") -> Callable[[], RemoteSession]:
        """Makes RemoteSessions keyed `prefix0`, `prefix1`, ... in creation order."""
        numbers = itertools.count()
        return lambda: RemoteSession(f"{prefix}{next(numbers)}")

    def open(self, session: RemoteSession) -> str:
        """Create the server session of `session` if it has none; returns its id."""
        with self._lock:
            if session.session_id is None:
                body = {"episode_key": session.episode_key} if session.episode_key else {}
                r = self.client.post(f"{self.base_url}/sessions", json=body, timeout=self.timeout_s)
                r.raise_for_status()
                session.session_id = str(r.json()["session_id"])
            return session.session_id

    def close_session(self, session: RemoteSession) -> None:
        if session.session_id is not None:
            self.client.delete(f"{self.base_url}/sessions/{session.session_id}", timeout=self.timeout_s)
            session.session_id = None

    def run(self, spec: ToolSpec, arguments: Mapping[str, Any], context: ToolContext,
            timeout_s: float) -> Any:
        session = context.state
        if not isinstance(session, RemoteSession):
            raise ToolException("HttpToolRunner needs RemoteSession states: build the Agent with "
                                "state_factory=runner.state_factory()")
        wait = timeout_s + self.timeout_s
        try:
            sid = self.open(session)
            r = self.client.post(f"{self.base_url}/sessions/{sid}/tools/{spec.name}",
                                 content=json.dumps({"arguments": dict(arguments)}, default=str),
                                 headers={"content-type": "application/json"}, timeout=wait)
        except httpx.TimeoutException:
            raise ToolTimeout(f"'{spec.name}': the tool server did not answer within {wait:g} s") from None
        except httpx.HTTPError as exc:
            raise ToolException(f"{spec.name}: tool server unreachable "
                                f"({type(exc).__name__}: {exc})") from None
        return self._result(spec.name, r)

    def _result(self, name: str, r: httpx.Response) -> Any:
        try:
            data = r.json()
        except ValueError:
            data = None
        if r.status_code == 404 and isinstance(data, dict) and isinstance(data.get("detail"), dict):
            detail = data["detail"]
            cls = UnknownTool if detail.get("type") == "unknown_tool" else ToolException
            raise cls(str(detail.get("message", "not found")))
        if r.status_code != 200 or not isinstance(data, dict):
            raise ToolException(f"{name}: tool server answered HTTP {r.status_code}: {r.text[:200]}")
        if "error" in data:
            error = data["error"]
            err = ERROR_CLASSES.get(str(error.get("type")), ToolException)(str(error.get("message", "")))
            err.injected = bool(error.get("injected", False))
            raise err
        if "output_text" in data:
            return InjectedOutput(str(data["output_text"]), str(data.get("fault", "malformed")))
        return data.get("output")

    def close(self) -> None:
        if self._own_client:
            self.client.close()

    def __enter__(self) -> HttpToolRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

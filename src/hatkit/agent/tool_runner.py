"""Run one tool call: argument checks, permission, the harness's timeout, typed errors."""

from __future__ import annotations

import atexit
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, Protocol

from ..harness import ToolContext, ToolSpec
from .errors import BadArguments, PermissionDenied, ToolException, ToolTimeout

_POOL = ThreadPoolExecutor(max_workers=8, thread_name_prefix="hatkit-tool")
atexit.register(_POOL.shutdown, wait=False, cancel_futures=True)


class ToolRunner(Protocol):
    """Executes a validated call; raises an AgentError subclass on failure. The simulation
    wraps this to add sandboxing and fault injection."""

    def run(self, spec: ToolSpec, arguments: Mapping[str, Any], context: ToolContext,
            timeout_s: float) -> Any: ...


def check_call(spec: ToolSpec, arguments: Mapping[str, Any],
               permissions: frozenset[str]) -> dict[str, Any]:
    """Validated arguments, or BadArguments / PermissionDenied."""
    try:
        args = spec.validate_arguments(arguments)
    except ValueError as exc:
        raise BadArguments(f"{spec.name}: {exc}") from None
    if spec.permission and spec.permission not in permissions:
        raise PermissionDenied(f"'{spec.name}' needs permission '{spec.permission}'")
    return args


class ThreadToolRunner:
    """Runs tools on a worker thread and stops waiting after the timeout.

    Python cannot kill a thread: a timed-out tool finishes in the background and its result
    is discarded. Tools that can hang should have their own I/O timeouts too.
    """

    def run(self, spec: ToolSpec, arguments: Mapping[str, Any], context: ToolContext,
            timeout_s: float) -> Any:
        future = _POOL.submit(spec.call, arguments, context)
        try:
            return future.result(timeout=timeout_s)
        except FutureTimeout:
            future.cancel()
            raise ToolTimeout(f"'{spec.name}' did not answer within {timeout_s:g} s") from None
        except ValueError as exc:
            raise ToolException(f"{spec.name}: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a failing tool is data
            raise ToolException(f"{spec.name}: {type(exc).__name__}: {exc}") from None


class InlineToolRunner:
    """Runs tools on the calling thread (no timeout): lowest overhead, for trusted fast tools
    and benchmarks of the loop itself."""

    def run(self, spec: ToolSpec, arguments: Mapping[str, Any], context: ToolContext,
            timeout_s: float) -> Any:
        try:
            return spec.call(arguments, context)
        except Exception as exc:  # noqa: BLE001
            raise ToolException(f"{spec.name}: {type(exc).__name__}: {exc}") from None

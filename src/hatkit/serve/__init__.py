"""HTTP serving of a harness agent: OpenAI-compatible chat, live messages, metrics, hot swap.

The public API (names load lazily: importing `hatkit.serve` does not start FastAPI):

    app = create_app(load_harness("live_commerce"), LocalModel.default())   # an ASGI app
    serve("live_commerce", "local", port=8000)                              # run it
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .app import create_app as create_app
    from .app import serve as serve
    from .latency import main as latency_main
    from .streaming import STREAM_POLICIES as STREAM_POLICIES

_EXPORTS = {"create_app": ("app", "create_app"), "serve": ("app", "serve"),
            "STREAM_POLICIES": ("streaming", "STREAM_POLICIES"), "latency_main": ("latency", "main")}

__all__ = ["STREAM_POLICIES", "create_app", "latency_main", "serve"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

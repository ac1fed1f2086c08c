"""Tool calls for judge tests, answered by the shipped live-commerce tools on a fresh shop state,
so a test's tool output is what the agent would really have seen (not a hand-made copy of it)."""

from __future__ import annotations

from typing import Any

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import ToolContext

_HARNESS = LC.harness()


def shop_call(name: str, **arguments: Any) -> tuple[str, dict[str, Any], Any]:
    """(tool name, arguments, the shipped tool's output) for one call."""
    ctx = ToolContext(ShopState(), dict(_HARNESS.rules), frozenset(_HARNESS.spec.permissions))
    return name, arguments, _HARNESS.tools[name].call(arguments, ctx)

"""Verification tools of the judge harness: read-only lookups the judge uses to check a host's
claims. They read the JudgeState (catalog, the JUDGED agent's rules and tool names, its trace)."""

from __future__ import annotations

from typing import Any

from hatkit.domains.live_commerce.rubric.state import JudgeState
from hatkit.harness import ToolContext, tool


def _state(ctx: ToolContext) -> JudgeState:
    if not isinstance(ctx.state, JudgeState):
        raise TypeError("judge tools need a JudgeState in the tool context")
    return ctx.state


@tool(kind="read")  # type: ignore[untyped-decorator]
def lookup_product(ctx: ToolContext, name_or_id: str) -> dict[str, Any]:
    """Catalog facts of one product: price, list price, saving, stock per variant, specs,
    delivery days, return class and window under the judged agent's rules, and promotions and
    coupons valid today.

    Args:
        name_or_id: A product id such as "EL-003", or its name (or a distinctive part of it).
    """
    return _state(ctx).lookup_product(name_or_id)


@tool(kind="read")  # type: ignore[untyped-decorator]
def lookup_rule(ctx: ToolContext, name: str) -> dict[str, Any]:
    """The value of a rule of the JUDGED agent's harness, e.g. free_shipping_threshold,
    standard_shipping_fee, return_window_days, max_coupon_percent, reply_max_chars, style_note.

    Args:
        name: The rule name.
    """
    return _state(ctx).lookup_rule(name)


@tool(kind="read")  # type: ignore[untyped-decorator]
def tool_results(ctx: ToolContext, tool: str | None = None) -> list[dict[str, Any]]:
    """The tools the judged agent called in this episode, with their arguments and what they
    returned (or their error).

    Args:
        tool: Only calls of this tool (its name in the agent harness, or its function name).
    """
    return _state(ctx).tool_results(tool)


@tool(kind="read")  # type: ignore[untyped-decorator]
def find_products(ctx: ToolContext, text: str) -> list[dict[str, Any]]:
    """The catalog products a text names (by full name, a distinctive part of the name, or id).

    Args:
        text: Any text, e.g. one of the host's replies.
    """
    return _state(ctx).find_products(text)

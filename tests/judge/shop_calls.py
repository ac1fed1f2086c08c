"""Tool calls for judge tests, answered by the shipped live-commerce tools on a fresh shop state,
so a test's tool output is what the agent would really have seen (not a hand-made copy of it)."""

from __future__ import annotations

from typing import Any

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import ToolContext

_HARNESS = LC.harness()
_JUDGE = LC.judge(role="eval")


def shop_call(name: str, **arguments: Any) -> tuple[str, dict[str, Any], Any]:
    """(tool name, arguments, the shipped tool's output) for one call."""
    ctx = ToolContext(ShopState(), dict(_HARNESS.rules), frozenset(_HARNESS.spec.permissions))
    return name, arguments, _HARNESS.tools[name].call(arguments, ctx)


def judge_reply(user: str, reply: str, *calls: tuple[str, dict[str, Any], Any],
                locale: str = "en") -> Any:
    """The eval judge's verdict on one conversation: the viewer's message, the tool calls
    (`shop_call` results) and the host's reply."""
    from hatkit.judge.conversations import LabelledConversation, to_trace

    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    for name, args, out in calls:
        messages.append({"role": "assistant", "tool_calls": [{"name": name, "arguments": args}]})
        messages.append({"role": "tool", "name": name, "content": out})
    messages.append({"role": "assistant", "content": reply})
    conv = LabelledConversation("t", "test", locale, messages, {"accuracy": 1, "effectiveness": 1})
    return _JUDGE.judge(to_trace(conv, _HARNESS), _HARNESS)


def passes(verdict: Any, dim: str) -> bool:
    """Whether `verdict` passes `dim` at the eval judge's threshold."""
    return bool(verdict.passed(dim, getattr(_JUDGE, "thresholds", {}).get(dim, 0.5)))

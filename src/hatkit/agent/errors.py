"""Typed failures of an episode. They become trace events and tool error messages fed back
to the model; none of them propagates out of a run."""

from __future__ import annotations

from typing import ClassVar


class AgentError(Exception):
    """Base: `kind` is the stable name written into traces and counted by evaluations."""

    kind: ClassVar[str] = "agent_error"

    def __init__(self, message: str = "", *, injected: bool = False) -> None:
        super().__init__(message)
        self.injected = injected
        """True when a fault injector raised it on purpose (recorded as fault_injected)."""

    def as_payload(self) -> dict[str, dict[str, str]]:
        """What the model is shown as the tool result."""
        return {"error": {"type": self.kind, "message": str(self)}}


class ToolTimeout(AgentError):
    kind = "timeout"


class MalformedToolCall(AgentError):
    kind = "malformed_call"


class PermissionDenied(AgentError):
    kind = "permission_denied"


class UnknownTool(AgentError):
    kind = "unknown_tool"


class BadArguments(AgentError):
    kind = "bad_arguments"


class ToolException(AgentError):
    """The tool itself raised (not found, invalid coupon, ...)."""

    kind = "tool_exception"


class ServerError(ToolException):
    """A transient 5xx from a tool backend: worth one retry."""

    kind = "server_error"


class HookVeto(AgentError):
    kind = "hook_veto"


class ToolBudgetExceeded(AgentError):
    kind = "tool_budget"


class InjectedOutput:
    """A tool result replaced by a fault injector (malformed, truncated or empty output):
    the loop feeds `text` to the model as the tool's output and records the fault."""

    def __init__(self, text: str, kind: str) -> None:
        self.text = text
        self.kind = kind


ERROR_KINDS = {c.kind: c for c in (ToolTimeout, MalformedToolCall, PermissionDenied, UnknownTool,
                                   BadArguments, ToolException, ServerError, HookVeto,
                                   ToolBudgetExceeded)}

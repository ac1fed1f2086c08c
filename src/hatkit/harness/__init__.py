"""The Harness: skills, prompts, hooks and tools around a model, as one versioned folder.

`load_harness(path_or_name)` gives an immutable `Harness` with a content hash; `.render()`
gives what the model sees. Tools are typed functions marked with `@tool`.
"""

from .errors import HarnessError, Problem
from .harness import Harness, RenderedHarness
from .hooks import (
    Hook,
    HookDecision,
    OnErrorEvent,
    PostToolEvent,
    PreReplyEvent,
    PreToolEvent,
)
from .loader import load_harness, resolve_harness_path
from .tools import ToolContext, ToolSpec, tool

__all__ = [
    "Harness", "HarnessError", "Hook", "HookDecision", "OnErrorEvent", "PostToolEvent",
    "PreReplyEvent", "PreToolEvent", "Problem", "RenderedHarness", "ToolContext", "ToolSpec",
    "load_harness", "resolve_harness_path", "tool",
]

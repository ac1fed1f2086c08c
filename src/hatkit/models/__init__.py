"""Model backends behind one protocol (`ChatModel`): local transformers with prefix caching
and batching, any OpenAI-compatible server (vLLM, SGLang, ...), and a scripted model for
tests. Also the embedded default model and its local cache."""

from .base import ChatMessage, ChatModel, ModelOutput, ModelRequest, ToolCall
from .cache import hatkit_home
from .default_model import (
    DefaultModelError,
    cache_status,
    ensure_default_model,
    load_default_model,
)
from .errors import (
    BackendTimeout,
    BackendUnavailable,
    BadModelRequest,
    CallBudgetSpent,
    ContextTooLong,
    ModelError,
    RateLimited,
    ScriptExhausted,
)
from .local import LocalModel
from .openai_compat import OpenAICompatibleModel
from .scripted import ScriptedModel

__all__ = [
    "BackendTimeout",
    "BackendUnavailable",
    "BadModelRequest",
    "CallBudgetSpent",
    "ChatMessage",
    "ChatModel",
    "ContextTooLong",
    "DefaultModelError",
    "LocalModel",
    "ModelError",
    "ModelOutput",
    "ModelRequest",
    "OpenAICompatibleModel",
    "RateLimited",
    "ScriptExhausted",
    "ScriptedModel",
    "ToolCall",
    "cache_status",
    "ensure_default_model",
    "hatkit_home",
    "load_default_model",
]

"""Model backends. For now: the embedded default model and its local cache."""

from .cache import hatkit_home
from .default_model import (
    DefaultModelError,
    cache_status,
    ensure_default_model,
    load_default_model,
)

__all__ = [
    "DefaultModelError", "cache_status", "ensure_default_model", "hatkit_home",
    "load_default_model",
]

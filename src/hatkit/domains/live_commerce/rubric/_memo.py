"""Memoising a function of one long-lived object (a catalog lexicon, a harness's rules).

Such objects are not hashable (dicts inside) but live as long as a judge uses them, so a result
is cached by the object's identity; the cache keeps the object, so its id cannot be reused by
another. Bounded: RL makes many harness variants, each with its own rules object.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")
MAX_OBJECTS = 512


def per_object(fn: Callable[[Any], R]) -> Callable[[Any], R]:
    """`fn(obj)` computed once per object (by identity)."""
    cache: dict[int, tuple[Any, R]] = {}

    @functools.wraps(fn)
    def cached(obj: Any) -> R:
        hit = cache.get(id(obj))
        if hit is None or hit[0] is not obj:
            if len(cache) >= MAX_OBJECTS:
                cache.clear()
            hit = cache[id(obj)] = (obj, fn(obj))
        return hit[1]

    return cached

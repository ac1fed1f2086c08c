"""What the generic simulator needs from a domain (a `hatkit.domain.Domain` provides it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from .augment import HsaData
from .truth import Question


class QuestionSource(Protocol):
    """Questions with ground truth, and the augmentation data for harness variants."""

    @property
    def hsa(self) -> HsaData: ...

    def questions(self, rules: Mapping[str, Any], *, n: int, seed: int, split: str,
                  locale: str = "en", categories: Sequence[str] | None = None) -> list[Question]: ...

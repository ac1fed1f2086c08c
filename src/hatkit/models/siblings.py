"""Sibling layers that read one input (q/k/v, gate/up) computed in one call: int8 groups
(precision.py) and bf16 packed groups (packing.py) both run through this."""

from __future__ import annotations

from typing import Any


class SiblingOutputs:
    """The output of sibling layers that read one input, computed once for all of them: the
    first member called on an input computes it, each member takes its columns once, then the
    input and output are forgotten."""

    def __init__(self, widths: list[int], compute: Any) -> None:
        self.bounds = [(sum(widths[:i]), sum(widths[:i + 1])) for i in range(len(widths))]
        self.compute = compute
        self.x: Any = None
        self.y: Any = None
        self.pending: set[int] = set()

    def take(self, member: int, x: Any) -> Any:
        if self.x is not x or member not in self.pending:
            self.x, self.y, self.pending = x, self.compute(x), set(range(len(self.bounds)))
        self.pending.discard(member)
        lo, hi = self.bounds[member]
        out = self.y[..., lo:hi]
        if not self.pending:
            self.x = self.y = None
        return out

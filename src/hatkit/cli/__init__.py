"""The `hatkit` command: one module per noun. Thin: parsing and printing only."""

from __future__ import annotations

from . import agent, harness, judge, serve, sim  # noqa: F401  (each registers its commands)
from ._common import app


def main() -> None:
    app()


__all__ = ["app", "main"]

"""The `hatkit` command: one module per noun. Thin: parsing and printing only."""

from __future__ import annotations

from importlib import import_module

from ._common import app

# Each module registers its commands on `app` when imported; one per line.
_COMMAND_MODULES = (
    "harness",
    "domains",
    "agent",
    "sim",
    "judge",
    "serve",
    "evolve",
    "run",
    "ui",
    "train",
    "evals",
    "export",
)
for _name in _COMMAND_MODULES:
    import_module(f"{__name__}.{_name}")


def main() -> None:
    app()


__all__ = ["app", "main"]

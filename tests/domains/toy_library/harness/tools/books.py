"""The toy library's one tool."""

from __future__ import annotations

from typing import Any

from hatkit.harness import ToolContext, tool

SHELF = {"dune": 2, "emma": 0, "ulysses": 1, "beloved": 3, "middlemarch": 0, "kindred": 1}


@tool(permission="books.read")
def book_status(ctx: ToolContext, title: str) -> dict[str, Any]:
    """Copies of a book on the shelf, and the loan period.

    Args:
        title: The book's title.
    """
    key = title.strip().lower()
    if key not in SHELF:
        raise KeyError(f"no book titled {title!r}")
    return {"title": key, "copies": SHELF[key], "loan_days": ctx.rules.get("loan_days")}

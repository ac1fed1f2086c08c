"""Errors that name the file, the line and what is wrong, so a user can fix a harness at once."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a harness folder."""

    file: str
    """Path relative to the harness folder (posix separators)."""
    line: int | None
    """1-based line number when the format has lines (YAML, front matter, templates, Python)."""
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.message}"


class HarnessError(Exception):
    """A harness folder that cannot be loaded; holds every problem found, not just the first."""

    def __init__(self, root: Path | str, problems: list[Problem]) -> None:
        self.root = Path(root)
        self.problems = sorted(problems, key=lambda p: (p.file, p.line or 0, p.message))
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"invalid harness {self.root} ({len(self.problems)} problem(s)):\n{lines}")

    @property
    def first(self) -> Problem:
        return self.problems[0]


class Problems:
    """Collects problems during a load; raises them together at the end."""

    def __init__(self) -> None:
        self.items: list[Problem] = []

    def add(self, file: str, line: int | None, message: str) -> None:
        self.items.append(Problem(file, line, message))

    def raise_if_any(self, root: Path) -> None:
        if self.items:
            raise HarnessError(root, self.items)

"""Shared pieces of the `hatkit` command: the root app, consoles, errors, common options."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..domain import Domain, domain_of
from ..harness import Harness, HarnessError, load_harness
from ..harness.versioning import HarnessRepo, VersioningError
from ..models.select import MODEL_HELP

app = typer.Typer(help="hatkit: Harness-Aware Training of tool-calling agents.",
                  no_args_is_help=True, pretty_exceptions_enable=False)

console = Console()
err = Console(stderr=True, soft_wrap=True)

HarnessArg = Annotated[str, typer.Argument(
    help="A harness folder, or the name of a shipped one (e.g. live_commerce).")]
DomainOpt = Annotated[str | None, typer.Option(
    "--domain", help="The domain (questions, oracle, judge rubric): see `hatkit domains`. Default: "
    "the one the harness names, else live_commerce.")]


def _domain(name: str | None, harness: Harness | None = None) -> Domain:
    """The domain by name (or the one `harness` names); a bad name is a clean error."""
    try:
        return domain_of(harness, name)
    except (ValueError, TypeError) as exc:
        raise _fail(str(exc)) from None


def _say(text: str) -> None:
    """One line that must not wrap (hashes, paths), with markup but no auto-highlighting."""
    console.print(text, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/] {message}", markup=True, highlight=False)
    return typer.Exit(code)


def _load(ref: str) -> Harness:
    try:
        return load_harness(ref)
    except HarnessError as exc:
        err.print(f"[red]invalid harness[/] {exc.root}", highlight=False)
        for p in exc.problems:
            err.print(f"  {p}", markup=False, highlight=False)
        raise typer.Exit(1) from None
    except FileNotFoundError as exc:
        raise _fail(str(exc)) from None


def _repo(folder: str) -> HarnessRepo:
    try:
        return HarnessRepo(folder)
    except VersioningError as exc:
        raise _fail(str(exc)) from None


class LoggedProgress(Progress):
    """A rich Progress that also speaks when stderr is not a terminal (a log file, CI, `nohup`):
    there rich draws nothing until the work ends, so a long job looked hung. It prints one
    plain line per tenth of each task's total and whenever a task's description changes."""

    def __init__(self, *columns: Any, **kwargs: Any) -> None:
        super().__init__(*columns, **kwargs)
        self._said: dict[TaskID, tuple[str, int]] = {}

    def update(self, task_id: TaskID, **kwargs: Any) -> None:
        super().update(task_id, **kwargs)
        if self.console.is_terminal:
            return
        task = self._tasks[task_id]
        tenth = int(10 * task.completed / task.total) if task.total else -1
        last = self._said.get(task_id)
        if last is None or last[0] != task.description or tenth > last[1]:
            total = f"/{task.total:g}" if task.total else ""
            self.console.print(f"{task.description}: {task.completed:g}{total} ({task.elapsed or 0:.0f} s)",
                               highlight=False, markup=False)
            self._said[task_id] = (task.description, tenth)


def _progress_bar(label: str) -> tuple[Progress, Callable[[int, int], None]]:
    bar = LoggedProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                         TimeElapsedColumn(), TimeRemainingColumn(), console=err)
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return bar, update



ModelOpt = Annotated[str, typer.Option("--model", "-m", help=MODEL_HELP)]
HarnessOpt = Annotated[str | None, typer.Option(
    help="Harness folder or shipped name (default: the --domain's own harness).")]


def _harness_for(harness: str | None, domain: str | None) -> Harness:
    """The harness named, else the domain's default harness."""
    return _load(harness) if harness else _load(str(_domain(domain).harness_dir))
LocaleOpt = Annotated[str | None, typer.Option(help="Render another shipped locale, e.g. zh.")]


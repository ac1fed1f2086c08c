"""Shared pieces of the `hatkit` command: the root app, consoles, errors, common options."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
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


def _progress_bar(label: str) -> tuple[Progress, Callable[[int, int], None]]:
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
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


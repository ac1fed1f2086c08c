"""`hatkit harness ...` and `hatkit model ...`: validate, inspect, version; the default model."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..harness import HarnessError
from ..harness.diff import diff_harnesses
from ..harness.versioning import VersioningError
from ._common import (
    HarnessArg,
    _fail,
    _load,
    _repo,
    _say,
    app,
    console,
)

harness_app = typer.Typer(help="Validate, inspect, render and version a harness folder.",
                          no_args_is_help=True)
model_app = typer.Typer(help="The embedded default model (SmolLM2-135M-Instruct).",
                        no_args_is_help=True)
app.add_typer(harness_app, name="harness")
app.add_typer(model_app, name="model")


@harness_app.command("validate")
def harness_validate(harness: HarnessArg = "live_commerce") -> None:
    """Check a harness folder; print every problem as file:line: message."""
    h = _load(harness)
    _say(f"[green]ok[/] {h.name} {h.content_hash}")


@harness_app.command("hash")
def harness_hash(harness: HarnessArg = "live_commerce") -> None:
    """Print the content hash (stable across copies, key order and line endings)."""
    print(_load(harness).content_hash)


@harness_app.command("show")
def harness_show(harness: HarnessArg = "live_commerce") -> None:
    """Summarise a harness: settings, rules, and what is enabled."""
    h = _load(harness)
    _say(f"[bold]{h.name}[/]  {h.content_hash[:12]}  {h.root}")
    console.print(h.spec.description)
    console.print(f"locale {h.spec.locale} (ships {', '.join(h.spec.locales)}); "
                  f"model {h.spec.model.model_dump()}; limits {h.spec.limits.model_dump()}")
    rules = Table("rule", "value", title="rules")
    for k, v in h.spec.rules.items():
        rules.add_row(k, json.dumps(v, ensure_ascii=False))
    console.print(rules)
    parts = Table("kind", "name", "details", title="enabled")
    for s in h.enabled_skills():
        parts.add_row("skill", s.name, s.description)
    for t in h.enabled_tools():
        parts.add_row("tool", t.name, f"{t.kind}, needs {t.permission or '-'}")
    for name in h.spec.enabled.hooks:
        rule = h.hook_rules.get(name)
        parts.add_row("hook", name, f"{rule.kind} on {rule.event}" if rule else "python hook")
    console.print(parts)
    console.print(f"permissions granted: {', '.join(h.spec.permissions) or '-'}")


@harness_app.command("render")
def harness_render(
    harness: HarnessArg = "live_commerce",
    locale: Annotated[str | None, typer.Option(help="Render another shipped locale, e.g. zh.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print system prompt and tool "
                                          "schemas as one JSON object.")] = False,
) -> None:
    """Print exactly what the model sees: the system prompt, tool schemas and skill list."""
    h = _load(harness)
    try:
        r = h.render(locale)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        print(json.dumps({"harness": r.harness_name, "hash": r.harness_hash, "locale": r.locale,
                          "system_prompt": r.system_prompt, "tools": r.tools,
                          "skills": [{"name": n, "description": d} for n, d in r.skills]},
                         ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(r.system_prompt)


@harness_app.command("commit")
def harness_commit(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    message: Annotated[str, typer.Option("-m", "--message", help="Commit message.")],
) -> None:
    """Validate, then commit the harness folder (only it) with its content hash."""
    repo = _repo(folder)
    _load(folder)
    try:
        entry = repo.commit(message)
    except (VersioningError, HarnessError) as exc:  # HarnessError: edited since _load
        raise _fail(str(exc)) from None
    _say(f"committed {entry.sha[:12]}  harness {entry.harness_hash}")


@harness_app.command("log")
def harness_log(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    limit: Annotated[int, typer.Option("-n", help="Show at most this many commits.")] = 20,
) -> None:
    """List the commits that touched the harness, newest first, with hashes and tags."""
    table = Table("commit", "date", "harness hash", "tags", "subject")
    for e in _repo(folder).log(limit):
        table.add_row(e.sha[:12], e.when.strftime("%Y-%m-%d %H:%M"),
                      (e.harness_hash or "-")[:12], ", ".join(e.tags), e.subject)
    console.print(table)


@harness_app.command("diff")
def harness_diff(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    rev_a: Annotated[str, typer.Argument(help="Older revision (commit, tag, HEAD~1...).")],
    rev_b: Annotated[str | None, typer.Argument(help="Newer revision; default: the working "
                                                "folder.")] = None,
) -> None:
    """What changed between two versions: rules, settings, skills, tools, hooks, prompts."""
    repo = _repo(folder)
    with tempfile.TemporaryDirectory(prefix="hatkit-diff-") as tmp:
        try:
            a = _load(str(repo.materialize(rev_a, Path(tmp) / "a")))
            b = _load(str(repo.materialize(rev_b, Path(tmp) / "b"))) if rev_b else _load(folder)
        except VersioningError as exc:
            raise _fail(str(exc)) from None
        for line in diff_harnesses(a, b).lines():
            print(line)


@harness_app.command("tag")
def harness_tag(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    name: Annotated[str, typer.Argument(help="Tag name, e.g. week-48.")],
    rev: Annotated[str, typer.Option(help="Revision to tag.")] = "HEAD",
    message: Annotated[str | None, typer.Option("-m", "--message")] = None,
) -> None:
    """Tag a harness commit (annotated tag carrying the harness hash)."""
    try:
        sha = _repo(folder).tag(name, rev, message)
    except VersioningError as exc:
        raise _fail(str(exc)) from None
    _say(f"tagged {sha[:12]} as {name}")


@harness_app.command("rollback")
def harness_rollback(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    rev: Annotated[str, typer.Argument(help="Revision to restore (commit, tag, HEAD~1...).")],
    force: Annotated[bool, typer.Option(help="Discard uncommitted changes in the folder.")] = False,
    commit: Annotated[bool, typer.Option(help="Record the rollback as a commit.")] = True,
) -> None:
    """Restore the folder byte for byte as it was at REV."""
    try:
        restored = _repo(folder).rollback(rev, force=force, commit=commit)
    except VersioningError as exc:
        raise _fail(str(exc)) from None
    _say(f"restored {folder} to {rev}; harness {restored}")


@model_app.command("prepare")
def model_prepare() -> None:
    """Convert the packaged GGUF into the local safetensors cache (once; verified after)."""
    from ..models import DefaultModelError, ensure_default_model

    try:
        path = ensure_default_model()
    except DefaultModelError as exc:
        raise _fail(str(exc)) from None
    _say(f"default model ready at {path}")


@model_app.command("status")
def model_status() -> None:
    """Say whether the default model cache is complete and matches its source."""
    from ..models import cache_status

    st = cache_status()
    _say(f"{'ok' if st.ok else 'not ready'}: {st.path} ({st.reason})")
    raise typer.Exit(0 if st.ok else 1)


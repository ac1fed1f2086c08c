"""`hatkit evolve ...` (the Harness Evolution loop) and `hatkit release ...` (releases)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from ..harness.versioning import VersioningError
from ..models.select import MODEL_HELP
from ._common import DomainOpt, _domain, _fail, _load, _say, app, console, err

evolve_app = typer.Typer(help="Harness Evolution: diagnose, propose, confirm, evaluate, "
                         "regression-check and release harness edits with frozen weights.",
                         no_args_is_help=True)
release_app = typer.Typer(help="Releases: harness commit + model checkpoint + admitting report.",
                          no_args_is_help=True)
app.add_typer(evolve_app, name="evolve")
app.add_typer(release_app, name="release")

RunDir = Annotated[Path, typer.Option("--run-dir", help="Folder of the run's journal, "
                                      "working copies, traces and reports.")]
HarnessDir = Annotated[Path, typer.Option("--harness", help="The harness folder (inside a git "
                                          "work tree); releases commit and tag it.")]


@evolve_app.command("run")
def evolve_run(
    harness: HarnessDir,
    run_dir: RunDir,
    model: Annotated[str, typer.Option("--model", "-m", help="'oracle' or " + MODEL_HELP)] = "oracle",
    approve: Annotated[str, typer.Option(help="ask (terminal), wait (for a decision in the "
                                         "journal, e.g. the web UI) or auto (never for Python "
                                         "code).")] = "ask",
    proposer: Annotated[str, typer.Option(help="rule (templated, offline) or llm.")] = "rule",
    llm: Annotated[str | None, typer.Option(help="For --proposer llm: URL#MODEL of an "
                                            "OpenAI-compatible server.")] = None,
    rounds: Annotated[int, typer.Option("--rounds", help="At most this many rounds.")] = 10,
    dev_n: Annotated[int, typer.Option(help="Dev questions per evaluation.")] = 60,
    regression_n: Annotated[int, typer.Option(help="Fixed regression set size.")] = 60,
    test_n: Annotated[int, typer.Option(help="Test questions for --report.")] = 60,
    threshold: Annotated[float, typer.Option(help="Max per-category drop on the regression set.")] = 0.05,
    patience: Annotated[int, typer.Option(help="Stop after this many rounds without a release.")] = 2,
    min_cluster: Annotated[int, typer.Option(help="Stop when every cluster is smaller.")] = 2,
    seed: Annotated[int, typer.Option()] = 0,
    report: Annotated[bool, typer.Option("--report", help="Afterwards, measure test error "
                                         "before/after and write RUN_DIR/report.json.")] = False,
    domain: DomainOpt = None,
) -> None:
    """Evolve a harness; resumable: rerun the same command after a crash."""
    from ..evolve.config import EvolveConfig
    from ..evolve.confirm import ConfirmGate, terminal_asker
    from ..evolve.journal import Journal
    from ..evolve.loop import EvolveLoop
    from ..evolve.proposers import Proposer, RuleBasedProposer
    from ..evolve.report import build_report, policy_for
    from ..models.errors import ModelError

    try:
        cfg = EvolveConfig(model=model, approve=approve, max_rounds=rounds, dev_n=dev_n,  # type: ignore[arg-type]
                           regression_n=regression_n, test_n=test_n, regression_threshold=threshold,
                           patience=patience, min_cluster=min_cluster, seed=seed)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    prop: Proposer
    if proposer == "rule":
        prop = RuleBasedProposer()
    elif proposer == "llm":
        if not llm or "#" not in llm:
            raise _fail("--proposer llm needs --llm URL#MODEL")
        from ..evolve.llm_proposer import LLMProposer
        from ..models.openai_compat import OpenAICompatibleModel

        url, _, name = llm.partition("#")
        prop = LLMProposer(OpenAICompatibleModel(base_url=url, model=name))
    else:
        raise _fail("--proposer must be rule or llm")
    try:
        dom = _domain(domain, _load(str(harness)))
        policy = policy_for(model, dom)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    judge = dom.judge(role="eval")
    gate = ConfirmGate(Journal(run_dir / "journal.jsonl"), cfg.approve,
                       asker=terminal_asker(console) if approve == "ask" else None,
                       on_wait=lambda e: err.print(f"waiting for a decision on edit {e.edit_id} "
                                                   f"(hatkit evolve decide {e.edit_id} approve "
                                                   f"--run-dir {run_dir})", highlight=False))
    try:
        loop = EvolveLoop(harness, run_dir, policy=policy, judge=judge, proposer=prop, gate=gate,
                          config=cfg, console=err, domain=dom)
        result = loop.run()
    except VersioningError as exc:
        raise _fail(str(exc)) from None
    except ModelError as exc:  # the proposer's model backend failed (the run is resumable)
        raise _fail(f"the proposer's model failed ({exc.kind}): {exc}; rerun the same command "
                    "to resume") from None
    _say(f"{result.rounds} round(s), {len(result.releases)} release(s); stopped: {result.stop_reason}")
    for name in result.releases:
        _say(f"  release {name}")
    if report:
        rep = build_report(harness, run_dir, policy, judge, cfg, dom)
        _say(f"test error {rep['test_error_before']:.3f} -> {rep['test_error_after']:.3f} "
             f"(error reduction rate {rep['error_reduction_rate']:.3f}); {run_dir / 'report.json'}")


@evolve_app.command("pending")
def evolve_pending(run_dir: RunDir) -> None:
    """List edits waiting at the Confirm gate, with their diffs."""
    from ..evolve.confirm import show_edit
    from ..evolve.journal import Journal

    edits = Journal(run_dir / "journal.jsonl").pending()
    if not edits:
        _say("no pending edits")
    for e in edits:
        show_edit(e, console)


@evolve_app.command("decide")
def evolve_decide(
    edit_id: Annotated[str, typer.Argument(help="The edit id (see 'hatkit evolve pending').")],
    decision: Annotated[str, typer.Argument(help="approve or reject.")],
    run_dir: RunDir,
    by: Annotated[str, typer.Option(help="Who decides (recorded).")] = "cli",
    comment: Annotated[str, typer.Option()] = "",
) -> None:
    """Approve or reject a pending edit (a loop run with --approve wait picks it up)."""
    from ..evolve.journal import Journal

    if decision not in ("approve", "reject"):
        raise _fail("decision must be approve or reject")
    try:
        ok = Journal(run_dir / "journal.jsonl").decide(edit_id, decision, by=by, comment=comment)  # type: ignore[arg-type]
    except KeyError as exc:
        raise _fail(str(exc.args[0])) from None
    if not ok:
        raise _fail(f"edit {edit_id} was already decided")
    _say(f"{decision}d {edit_id}")


@release_app.command("list")
def release_list(harness: HarnessDir) -> None:
    """Every release of the harness's repository, oldest first."""
    from ..evolve.release import list_releases

    try:
        rels = list_releases(harness)
    except VersioningError as exc:
        raise _fail(str(exc)) from None
    table = Table()
    table.add_column("name", no_wrap=True)
    for col in ("harness commit", "harness hash", "model", "created"):
        table.add_column(col)
    for r in rels:
        table.add_row(r.name, r.harness_commit[:12], r.harness_hash[:12], r.model, r.created)
    console.print(table)


@release_app.command("show")
def release_show(name: str, harness: HarnessDir) -> None:
    """A release with the report that admitted it (JSON)."""
    from ..evolve.release import show_release

    try:
        console.print_json(json.dumps(show_release(name, harness).to_dict(), default=str))
    except VersioningError as exc:
        raise _fail(str(exc)) from None


@release_app.command("diff")
def release_diff(a: str, b: str, harness: HarnessDir) -> None:
    """What changed between two releases (rules, skills, tools, hooks, prompts)."""
    from ..evolve.release import diff_releases

    try:
        console.print(diff_releases(a, b, harness), markup=False, highlight=False)
    except VersioningError as exc:
        raise _fail(str(exc)) from None


@release_app.command("rollback")
def release_rollback(
    name: str, harness: HarnessDir,
    force: Annotated[bool, typer.Option(help="Discard uncommitted harness changes.")] = False,
) -> None:
    """Restore the harness folder of a release byte for byte (as a new commit)."""
    from ..evolve.release import rollback

    try:
        restored = rollback(name, harness, force=force)
    except VersioningError as exc:
        raise _fail(str(exc)) from None
    _say(f"rolled back to {name} (harness {restored[:12]})")


@evolve_app.command("compare")
def evolve_compare(
    run_dir: RunDir,
    model: Annotated[list[str], typer.Option("--model", "-m", help="NAME=SPEC of a frozen model "
                                             "(SPEC as --model elsewhere); give two: the first is "
                                             "the baseline (Fixed-SFT), the second the candidate (HAT).")],
    domain: DomainOpt = None,
    rounds: Annotated[int, typer.Option("--rounds", help="At most this many rounds per model.")] = 4,
    dev_n: Annotated[int, typer.Option(help="Dev questions per evaluation.")] = 40,
    regression_n: Annotated[int, typer.Option(help="Fixed regression set size.")] = 40,
    test_n: Annotated[int, typer.Option(help="Test questions before and after.")] = 60,
    seed: Annotated[int, typer.Option()] = 0,
) -> None:
    """Claim 4: evolve the domain's documented defective harness (defects.yaml) once per frozen
    model (rule-based proposer, auto-approval, same sizes), then compare the two test-error
    reductions on the same test questions: the difference with a 95% bootstrap interval.
    Resumable: rerun the same command."""
    from ..evolve.compare import CompareError, compare_evolution

    pairs = [(name, spec) for name, _, spec in (m.partition("=") for m in model)]
    try:
        summary = compare_evolution(run_dir, pairs, _domain(domain), rounds=rounds, dev_n=dev_n,
                                    regression_n=regression_n, test_n=test_n, seed=seed, console=err)
    except CompareError as exc:
        raise _fail(str(exc)) from None
    for name, rep in summary["reports"].items():
        _say(f"{name}: {rep['rounds']} round(s); test error {rep['test_error_before']:.3f} -> "
             f"{rep['test_error_after']:.3f}")
    diff = summary["difference"]
    a, b = diff["a"], diff["b"]
    _say(f"error reduction: {a} {diff['reduction_a']:+.3f}, {b} {diff['reduction_b']:+.3f}; "
         f"difference {diff['difference']:+.3f} [{diff['lo']:+.3f}, {diff['hi']:+.3f}] over {diff['n']} "
         f"test questions -> {run_dir / 'compare.json'}")

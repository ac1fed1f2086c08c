"""`hatkit run`: the whole HAT pipeline, resumable stage by stage, with an up-front estimate."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..pipeline.estimate import time_left
from ._common import DomainOpt, LoggedProgress, _domain, _fail, _say, app, console, err


def _quiet_libraries() -> None:
    """The pipeline draws its own progress; the libraries' per-file bars and deprecation
    chatter would bury it (their warnings still reach the log files of each stage)."""
    import warnings

    from datasets.utils.logging import disable_progress_bar
    from transformers.utils import logging as hf_logging

    disable_progress_bar()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    warnings.filterwarnings("ignore", category=FutureWarning)


def _sft_plans(run: Any, cfg: Any, stages: list[Any], tables: bool = False) -> None:
    """The SFT stages' length plans (what max_length cuts), or a note while no data exists."""
    from ..pipeline.stages import sft_length_plan

    for stage in stages:
        if stage.kind != "train" or stage.row is None or stage.row.stage != "sft":
            continue
        plan = sft_length_plan(stage, run, cfg)
        if plan is None:
            _say(f"[dim]{stage.label}: length plan once the data is built[/]")
        elif tables:
            console.print(plan.table())
        else:
            _say(f"{stage.label}: {plan.summary()}")


def _detectable_table(cfg: Any) -> Table:
    """For each published claim, the smallest paired effect these sizes detect."""
    from ..pipeline.detectable import DISCORDANT, LENGTH_SD, detectable_effects

    table = Table("claim", "comparison", "n", "smallest detectable", "published", "decidable",
                  title="What this profile can decide (alpha 0.05, power 0.8)",
                  caption=f"assumed: {DISCORDANT:.0%} discordant pairs; length differences with sd "
                          f"{LENGTH_SD:.0%} of the mean")
    for d in detectable_effects(cfg):
        table.add_row(*d.row())
    return table


def _estimate_table(stages: list[Any], estimates: list[Any], done: set[str]) -> Table:
    table = Table("stage", "estimate", "basis", title="Plan (estimates from measured CPU speeds)")
    total = 0.0
    for stage, est in zip(stages, estimates, strict=True):
        if stage.name in done:
            table.add_row(stage.label, "done", "finished earlier; reused")
            continue
        total += est.seconds
        table.add_row(stage.label, f"{est.seconds / 60:.1f} min", est.basis)
    table.add_row("[b]total[/]", f"[b]{total / 60:.1f} min[/]", "")
    return table


@app.command("run")
def run_cmd(
    profile: Annotated[str, typer.Option(
        help="quick (this 2-core CPU, about an hour), cpu (the smallest run that can decide the "
             "published claims, about 5 hours, resumable by stage) or full (a GPU and a Qwen3 "
             "model).")] = "quick",
    config: Annotated[Path | None, typer.Option(help="YAML file of pipeline settings over the "
                                                "profile (see hatkit.pipeline.PipelineConfig).")] = None,
    run_id: Annotated[str | None, typer.Option(help="Folder name under --runs; default hat-<profile>. "
                                               "Rerunning the same id reuses finished stages.")] = None,
    runs: Annotated[Path, typer.Option(help="Where run folders live.")] = Path("runs"),
    base_model: Annotated[str | None, typer.Option(help="Override the base model: 'local' or a "
                                                   "checkpoint folder.")] = None,
    fresh: Annotated[bool, typer.Option(help="Delete the run folder first instead of resuming.")] = False,
    plan_only: Annotated[bool, typer.Option("--plan", help="Print the plan and estimate, then "
                                            "stop.")] = False,
    domain: DomainOpt = None,
) -> None:
    """The HAT pipeline: data -> Base -> Fixed-SFT -> HSA-SFT -> +OPD -> HAT (HSA-RL), every
    evaluation suite on every model, then runs/<id>/report.md and report.html."""
    from ..evals.episodes import BackendFailed
    from ..models.default_model import DefaultModelError
    from ..pipeline import PipelineConfigError, RunMismatchError, load_pipeline_config, prepare, run_pipeline
    from ..train import TruncationRefused

    _quiet_libraries()
    overrides: dict[str, Any] = {"base_model": base_model} if base_model else {}
    if domain is not None:
        overrides["domain"] = _domain(domain).name
    try:
        cfg = load_pipeline_config(profile, config, overrides or None)
    except PipelineConfigError as exc:
        raise _fail(str(exc)) from None
    default_id = f"hat-{cfg.profile}" + (f"-{cfg.domain}" if cfg.domain else "")
    root = runs / (run_id or default_id)
    if fresh and root.exists():
        shutil.rmtree(root)
    try:
        run, stages, estimates = prepare(cfg, root)
    except RunMismatchError as exc:
        raise _fail(str(exc)) from None
    done = {s.name for s in stages if s.kind != "report" and run.done(s) is not None}
    console.print(_estimate_table(stages, estimates, done))
    console.print(_detectable_table(cfg))
    _sft_plans(run, cfg, [s for s in stages if s.name not in done])
    if plan_only:
        return
    bar = LoggedProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                         TimeElapsedColumn(), console=err, transient=True)
    started = time.time()

    def on_start(stage: Any, skipped: bool) -> Any:
        if skipped:
            _say(f"[dim]skip[/] {stage.label} (finished earlier)")
            return None
        _say(f"[b]{stage.label}[/] ...")
        _sft_plans(run, cfg, [stage], tables=True)
        task = bar.add_task(stage.label, total=None)

        def update(done_n: int, total: int) -> None:
            bar.update(task, completed=done_n, total=total)

        return update

    actual: dict[str, float] = {}
    remaining = {e.stage: e for e in estimates if e.stage not in done}
    kinds = {s.name: s.kind for s in stages}

    def on_end(stage: Any, record: dict[str, Any]) -> None:
        if stage.name not in remaining:
            return
        actual[stage.name] = float(record.get("seconds", 0))
        eta = time_left(list(remaining.values()), actual, kinds)
        _say(f"  done in {actual[stage.name]:.0f} s; about {eta / 60:.0f} min left")

    try:
        with bar:
            run_pipeline(cfg, root, on_start=on_start, on_end=on_end)
    except (DefaultModelError, RunMismatchError, TruncationRefused, BackendFailed) as exc:
        raise _fail(str(exc)) from None
    _say(f"pipeline finished in {(time.time() - started) / 60:.1f} min")
    _say(f"report: {root / 'report.md'} and {root / 'report.html'}")
    console.print((root / "report.md").read_text(encoding="utf-8").split("## Plots")[0], markup=False,
                  highlight=False)

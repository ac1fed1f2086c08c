"""Run the pipeline's stages in order, skipping finished ones; the CLI draws the progress."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .config import PipelineConfig
from .estimate import Estimate, estimate
from .report import write_report
from .stages import Progress, RunDir, Stage, plan, run_stage_outputs


class RunMismatchError(ValueError):
    """The run folder was started with other settings; mixing them would corrupt the table."""


def prepare(cfg: PipelineConfig, root: Path) -> tuple[RunDir, list[Stage], list[Estimate]]:
    """Create or reopen `root`, refusing one that was started with different settings."""
    run = RunDir(root)
    root.mkdir(parents=True, exist_ok=True)
    saved = root / "pipeline.json"
    current = cfg.model_dump(mode="json")
    if saved.is_file():
        previous = json.loads(saved.read_text(encoding="utf-8"))
        if previous != current:
            changed = sorted(k for k in set(previous) | set(current) if previous.get(k) != current.get(k))
            raise RunMismatchError(f"{root} was started with other settings ({', '.join(changed)} "
                                   "differ); pick another --run-id or pass --fresh")
    else:
        saved.write_text(json.dumps(current, indent=2) + "\n", encoding="utf-8")
    stages = plan(cfg)
    return run, stages, estimate(stages, cfg)


def run_pipeline(cfg: PipelineConfig, root: Path, *,
                 on_start: Callable[[Stage, bool], Progress | None] | None = None,
                 on_end: Callable[[Stage, dict[str, Any]], None] | None = None) -> RunDir:
    """Every stage in order. `on_start(stage, skipped)` may return a progress callback."""
    run, stages, _ = prepare(cfg, root)
    for stage in stages:
        skipped = stage.kind != "report" and run.done(stage) is not None
        progress = on_start(stage, skipped) if on_start else None
        if stage.kind == "report" and run.stage_file(stage).exists():
            run.stage_file(stage).unlink()  # the report is always rewritten from the results
        record = run_stage(stage, run, cfg, progress)
        if on_end:
            on_end(stage, record)
    return run


def run_stage(stage: Stage, run: RunDir, cfg: PipelineConfig,
              progress: Progress | None = None) -> dict[str, Any]:
    """Run one stage (unless it is done) and record it; returns its record."""
    record = run.done(stage)
    if record is not None:
        return record
    started = time.time()
    outputs = (write_report(run, cfg) if stage.kind == "report"
               else run_stage_outputs(stage, run, cfg, progress))
    record = {"stage": stage.name, "outputs": outputs, "seconds": round(time.time() - started, 1),
              "finished": datetime.now(UTC).isoformat(timespec="seconds")}
    run.mark_done(stage, record)
    return record

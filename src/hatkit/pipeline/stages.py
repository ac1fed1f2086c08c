"""The HAT pipeline as an ordered list of stages, each resumable on its own.

data -> evaluate Base -> Fixed-harness SFT -> HSA-SFT -> + General OPD -> + HSA-RL (= HAT),
every suite on every model, then the report. A stage that finished wrote
`stages/<name>.json`; a rerun skips it and reuses its outputs, so a killed run loses at most
the stage it was in (and the training stages resume from their own last checkpoint).

SFT's `max_length` is sized from the built rows unless the pipeline config sets one, so no
trained token is cut; the length plan of every training stage goes into its record
(`outputs.length_plan`) for the report to quote.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..domain import get_domain
from .config import PipelineConfig

if TYPE_CHECKING:
    from ..train import LengthPlan

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class ModelRow:
    """One row of the ablation table: the model, its training stage and its parent row."""

    key: str
    label: str
    stage: str | None  # hatkit.train.<stage>; None = the base model, untrained
    parent: str | None
    mode: str | None = None  # SFT dataset mode: fixed or hsa


ROWS = (
    ModelRow("base", "Base", None, None),
    ModelRow("fixed_sft", "Fixed-SFT", "sft", "base", "fixed"),
    ModelRow("hsa_sft", "HSA-SFT", "sft", "base", "hsa"),
    ModelRow("opd", "+OPD", "opd", "hsa_sft"),
    ModelRow("hat", "HAT", "rl", "opd"),
)
ROW_BY_KEY = {r.key: r for r in ROWS}


@dataclass(frozen=True)
class Stage:
    name: str
    kind: str  # data | train | eval | report
    row: ModelRow | None = None

    @property
    def label(self) -> str:
        if self.kind == "evolve":
            return "evolve the defective harness (Fixed-SFT, HAT)"
        if self.row is None:
            return self.name
        return f"{'train' if self.kind == 'train' else 'evaluate'} {self.row.label}"


def plan(cfg: PipelineConfig | None = None) -> list[Stage]:
    """Stages in run order: each model is evaluated as soon as it exists; the claim-4
    evolution comparison (when the config sizes it) once Fixed-SFT and HAT both exist."""
    stages = [DATA]
    for row in ROWS:
        if row.stage is not None:
            stages.append(Stage(f"train-{row.key}", "train", row))
        stages.append(Stage(f"eval-{row.key}", "eval", row))
    if cfg is None or cfg.evolution_test_n > 0:
        stages.append(EVOLVE)
    stages.append(Stage("report", "report"))
    return stages


class RunDir:
    """The layout of `runs/<id>/`: where every stage reads and writes."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.data = root / "data"
        self.checkpoints = root / "checkpoints"
        self.eval = root / "eval"
        self.stages = root / "stages"

    def stage_file(self, stage: Stage) -> Path:
        return self.stages / f"{stage.name}.json"

    def done(self, stage: Stage) -> dict[str, Any] | None:
        path = self.stage_file(stage)
        if not path.is_file():
            return None
        record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        return record

    def mark_done(self, stage: Stage, record: dict[str, Any]) -> None:
        self.stages.mkdir(parents=True, exist_ok=True)
        tmp = self.stage_file(stage).with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        os.replace(tmp, self.stage_file(stage))

    def model_path(self, row: ModelRow, base_model: str) -> str:
        """The checkpoint a row's model lives in ('local' for the embedded base model)."""
        if row.stage is None:
            return base_model
        record = self.done(Stage(f"train-{row.key}", "train", row))
        if record is None:
            raise RuntimeError(f"the {row.label} model is not trained yet")
        return str(record["outputs"]["checkpoint"])


DATA = Stage("data", "data")
EVOLVE = Stage("evolve", "evolve")
"""Claim 4: the domain's defective harness evolved with Fixed-SFT and with HAT frozen."""


def train_config(stage: Stage, run: RunDir, cfg: PipelineConfig) -> Any:
    """A training stage's config: its profile, the pipeline's overrides, this run's folders;
    SFT's max_length fitted to the longest row unless the pipeline config names one."""
    from ..train import load_config

    row = stage.row
    assert row is not None and row.stage is not None and row.parent is not None
    overrides: dict[str, Any] = {
        **cfg.train.get(row.stage, {}),  # type: ignore[call-overload]
        "model": run.model_path(ROW_BY_KEY[row.parent], cfg.base_model),
        "output_dir": str(run.checkpoints / row.key), "seed": cfg.seed,
    }
    if row.stage == "sft":
        overrides.update(dataset_dir=str(run.data), mode=row.mode)
    if row.stage == "opd":
        overrides["teacher"] = cfg.base_model
    if row.stage == "rl" and cfg.domain is not None:
        overrides.setdefault("domain", cfg.domain)
        overrides.setdefault("harness", str(get_domain(cfg.domain).harness_dir))
    config = load_config(row.stage, None, cfg.train_profile, overrides)
    if row.stage == "sft" and "max_length" not in cfg.train.get("sft", {}):
        from ..train import fit_max_length, read_rows

        config.max_length = fit_max_length(read_rows(config))
    return config


def sft_length_plan(stage: Stage, run: RunDir, cfg: PipelineConfig) -> LengthPlan | None:
    """What an SFT stage's max_length cuts, once the data is built (None otherwise)."""
    if stage.row is None or stage.row.stage != "sft" or run.done(DATA) is None:
        return None
    from ..train import sft_length_plan as length_plan

    return length_plan(train_config(stage, run, cfg))


def _train(stage: Stage, run: RunDir, cfg: PipelineConfig, progress: Progress | None) -> dict[str, Any]:
    assert stage.row is not None
    from ..train import train_stage
    from ..train.checkpoint import read_meta

    plans: list[Any] = []
    train = train_stage(str(stage.row.stage))
    checkpoint = train(train_config(stage, run, cfg), resume=True, progress=progress, on_plan=plans.append)
    outputs: dict[str, Any] = {"checkpoint": str(checkpoint)}
    metrics = (read_meta(checkpoint) or {}).get("metrics", {})
    if "steps_without_signal" in metrics:
        outputs["rl_signal"] = {"steps": metrics.get("global_step"),
                                "steps_without_signal": metrics["steps_without_signal"]}
    if plans:
        outputs["length_plan"] = plans[-1].record()
    return outputs


def _data(run: RunDir, cfg: PipelineConfig, progress: Progress | None) -> dict[str, Any]:
    from transformers import AutoTokenizer

    from ..models.chat_format import ChatTemplateFormat
    from ..train import BuildSettings, build_datasets, resolve_model

    source = resolve_model(cfg.base_model)
    fmt = ChatTemplateFormat(AutoTokenizer.from_pretrained(source), native_tools=False)
    d = cfg.data
    settings = BuildSettings(out=run.data, train_episodes=d.train_episodes,
                             dev_episodes=d.dev_episodes, seed=cfg.seed, n_variants=d.n_variants,
                             fault_rate=d.fault_rate, domain=cfg.domain, think=d.think,
                             hsa_base=d.hsa_base, hsa_base_share=d.hsa_base_share)
    total = 2 * (d.train_episodes + d.dev_episodes)
    seen: dict[str, int] = {}

    def update(label: str, done: int, _total: int) -> None:
        seen[label] = done
        if progress is not None:
            progress(sum(seen.values()), total)

    manifest = build_datasets(settings, fmt, progress=update)
    return {"manifest": str(run.data / "manifest.json"), "disjoint": manifest["disjoint"]["ok"]}


def _eval_spec(run: RunDir, row: ModelRow, cfg: PipelineConfig) -> str:
    """The `--model` spec a row's model is evaluated as: its checkpoint, in eval_precision."""
    from ..train import resolve_model

    spec = run.model_path(row, cfg.base_model)
    spec = spec if spec == "local" else str(resolve_model(spec))
    return spec if cfg.eval_precision is None else f"{spec}@{cfg.eval_precision}"


def _eval(stage: Stage, run: RunDir, cfg: PipelineConfig, progress: Progress | None) -> dict[str, Any]:
    from ..domain import get_domain
    from ..evals import run_suites
    from ..models.select import load_model

    assert stage.row is not None
    settings = cfg.eval_settings
    # the decoder batches what the suite hands it together (its default of 8 split the quick
    # profile's batches of 16 in two)
    model = load_model(_eval_spec(run, stage.row, cfg), max_batch=settings.batch_size)
    out = run.eval / stage.row.key
    results = run_suites(cfg.suites_for(stage.row.key), model, sizes=cfg.suite_sizes(),
                         settings=settings, out_dir=out, seed=cfg.seed, progress=progress,
                         domain=cfg.domain)
    judge = get_domain(cfg.domain).judge(role="eval")
    return {"dir": str(out), "suites": {name: r.metrics for name, r in results.items()},
            "precision": getattr(model, "precision", None),
            "eval_judge": {"name": judge.name, "hash": judge.judge_hash}}


def _evolve(run: RunDir, cfg: PipelineConfig) -> dict[str, Any]:
    from ..evolve.compare import compare_evolution

    models = [(key, _eval_spec(run, ROW_BY_KEY[key], cfg)) for key in ("fixed_sft", "hat")]
    out = run.root / "evolve"
    summary = compare_evolution(out, models, get_domain(cfg.domain), rounds=cfg.evolution_rounds,
                                dev_n=cfg.evolution_dev_n, regression_n=cfg.evolution_dev_n,
                                test_n=cfg.evolution_test_n, seed=cfg.seed)
    return {"dir": str(out), **summary}


def run_stage_outputs(stage: Stage, run: RunDir, cfg: PipelineConfig,
                      progress: Progress | None = None) -> dict[str, Any]:
    """Run a data, train, eval or evolve stage; returns its outputs (the report is `run.py`'s)."""
    if stage.kind == "data":
        return _data(run, cfg, progress)
    if stage.kind == "train":
        return _train(stage, run, cfg, progress)
    if stage.kind == "eval":
        return _eval(stage, run, cfg, progress)
    if stage.kind == "evolve":
        return _evolve(run, cfg)
    raise ValueError(f"stage {stage.name} of kind {stage.kind!r} is not run here")

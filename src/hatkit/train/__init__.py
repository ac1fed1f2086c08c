"""Training: dataset building and the three HAT stages (HSA-SFT, General OPD, HSA-RL).

The public API; other packages import from here, not from the modules. Names load lazily, so
importing `hatkit.train` does not import TRL or torch until a stage is used.

    settings = BuildSettings(out=Path("runs/data"), domain="live_commerce")
    build_datasets(settings, token_format)
    config = load_config("sft", None, "quick", {"dataset_dir": "runs/data"})
    checkpoint = train_stage("sft")(config)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the names below, for type checkers (at run time __getattr__ loads them)
    from .checkpoint import finished_checkpoint as finished_checkpoint
    from .checkpoint import read_meta as read_meta
    from .checkpoint import resolve_model as resolve_model
    from .config import ConfigError as ConfigError
    from .config import load_config as load_config
    from .config import parse_overrides as parse_overrides
    from .dataset import BuildSettings as BuildSettings
    from .dataset import build_datasets as build_datasets
    from .length_plan import LengthPlan as LengthPlan
    from .length_plan import TruncationRefused as TruncationRefused
    from .rl_config import HatRLConfig as HatRLConfig
    from .sft import fit_max_length as fit_max_length
    from .sft import length_plan as sft_length_plan
    from .sft import read_rows as read_rows

_EXPORTS = {
    "BuildSettings": "dataset", "build_datasets": "dataset",
    "ConfigError": "config", "load_config": "config", "parse_overrides": "config",
    "LengthPlan": "length_plan", "TruncationRefused": "length_plan",
    "HatRLConfig": "rl_config",
    "finished_checkpoint": "checkpoint", "read_meta": "checkpoint", "resolve_model": "checkpoint",
    "fit_max_length": "sft", "sft_length_plan": "sft:length_plan", "read_rows": "sft",
}
STAGES = ("sft", "opd", "rl")

__all__ = [
    "STAGES", "BuildSettings", "ConfigError", "HatRLConfig", "LengthPlan", "TruncationRefused",
    "build_datasets", "finished_checkpoint", "fit_max_length", "load_config", "parse_overrides",
    "read_meta", "read_rows", "resolve_model", "sft_length_plan", "train_stage",
]


def train_stage(stage: str) -> Callable[..., Any]:
    """The `train(config, *, resume=True, progress=None, on_plan=None)` function of a stage."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage '{stage}' (choose from {', '.join(STAGES)})")
    fn: Callable[..., Any] = importlib.import_module(f"{__name__}.{stage}").train
    return fn


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, _, attr = _EXPORTS[name].partition(":")
        return getattr(importlib.import_module(f"{__name__}.{module}"), attr or name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

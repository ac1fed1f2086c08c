"""Evaluation suites (`hatkit eval`): live QA, held-out-variant QA, general instruction
following, tool faults, safety, think lengths and latency.

    from hatkit.evals import SUITES, run_suite, run_suites
    result = run_suite("live_qa", "local", n=20, out_dir=Path("runs/eval"))
    result.metrics  # {"success": ..., "success_lo": ..., "success_hi": ..., "answer_rate": ...,
                    #  "accuracy": ..., "effectiveness": ..., "score": ...}

`synthesize_if_prompts` (IFEval-style prompts with disjoint train/eval splits) is also what
OPD trains on. Submodules import lazily: `hatkit.evals.if_prompts` loads no model code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .if_prompts import IFPrompt, synthesize_if_prompts
from .result import CPU_SETTINGS, DEFAULT_SETTINGS, QUICK_SETTINGS, EvalSettings, SuiteResult

if TYPE_CHECKING:
    from .suites import DEFAULT_SIZES, QUICK_SIZES, SUITES, run_suite, run_suites

_LAZY = ("SUITES", "DEFAULT_SIZES", "QUICK_SIZES", "run_suite", "run_suites")


def __getattr__(name: str) -> Any:
    if name in _LAZY:  # the suites import the agent, sim and judge packages
        from . import suites

        return getattr(suites, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CPU_SETTINGS", "DEFAULT_SETTINGS", "DEFAULT_SIZES", "QUICK_SETTINGS", "QUICK_SIZES", "SUITES",
    "EvalSettings",
    "IFPrompt", "SuiteResult", "run_suite", "run_suites", "synthesize_if_prompts",
]

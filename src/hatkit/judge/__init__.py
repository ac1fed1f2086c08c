"""Agent-as-a-Judge: a judge is itself a harness (rubric skills, verification tools, hooks),
run either as deterministic code (`ProgrammaticJudge`) or by a model (`LLMJudge`); both give
a `Verdict` with evidence. `JudgePair` keeps the reward judge and the eval judge apart, and
calibration measures agreement with labels round by round."""

from .agreement import judge_agreement
from .calibrate import CalibrationRound, report, run_round
from .labels import Label, load_labels, reference_labels, save_labels
from .llm import LLMJudge
from .programmatic import JUDGE_HARNESS, ProgrammaticJudge
from .roles import JudgePair, check_disjoint
from .verdict import Evidence, ItemScore, Judge, Verdict

__all__ = [
    "JUDGE_HARNESS", "CalibrationRound", "Evidence", "ItemScore", "Judge", "JudgePair", "LLMJudge",
    "Label", "ProgrammaticJudge", "Verdict", "check_disjoint", "judge_agreement", "load_labels",
    "reference_labels", "report", "run_round", "save_labels",
]

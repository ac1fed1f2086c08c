"""Agent-as-a-Judge, generic over domains: a judge is itself a harness (rubric skills,
verification tools, hooks), run either as deterministic code (a domain's programmatic judge,
`Domain.judge`) or by a model (`LLMJudge`); both give a `Verdict` with evidence. `JudgePair`
keeps the reward judge and the eval judge apart, and calibration measures agreement with
labels round by round."""

from .agreement import judge_agreement
from .calibrate import CalibrationRound, report, run_round
from .labels import Label, LabelledItem, load_labels, save_labels
from .llm import LLMJudge
from .roles import JudgePair, check_disjoint
from .verdict import Evidence, ItemScore, Judge, Verdict

__all__ = [
    "CalibrationRound", "Evidence", "ItemScore", "Judge", "JudgePair", "LLMJudge", "Label",
    "LabelledItem", "Verdict", "check_disjoint", "judge_agreement", "load_labels", "report",
    "run_round", "save_labels",
]

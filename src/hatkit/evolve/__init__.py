"""Harness Evolution: with the model's weights frozen, improve the agent by editing its harness
in a loop a human controls and that never ships a regression.

Diagnose (dev failures clustered by category and error type) -> Propose (rule-based or LLM,
untrusted edits applied to a working copy that must validate) -> Evaluate on dev -> Confirm
(human gate; `--approve ask|wait|auto`, never auto for Python code) -> Regression check per
category on a fixed set -> Release (git commit + tag binding harness, model and report) ->
early stopping. The append-only `journal.Journal` is the loop's only state, so a killed run
resumes exactly; `release` lists, shows, diffs and rolls back releases; `judge_loop` runs the
same machinery on a judge harness against calibration labels.

One small module per step: journal, edits, evaluate, diagnose, proposers, llm_proposer,
confirm, regression, stopping, release, loop, report, judge_loop, config.
"""

from .config import EvolveConfig
from .confirm import ConfirmGate
from .diagnose import Cluster, Diagnosis, diagnose
from .edits import Edit, EditError
from .journal import Journal, PendingEdit
from .loop import EvolveLoop, LoopResult
from .proposers import ProposalContext, Proposer, RuleBasedProposer
from .release import Release, diff_releases, list_releases, rollback, show_release

__all__ = [
    "Cluster", "ConfirmGate", "Diagnosis", "Edit", "EditError", "EvolveConfig", "EvolveLoop",
    "Journal", "LoopResult", "PendingEdit", "ProposalContext", "Proposer", "Release",
    "RuleBasedProposer", "diagnose", "diff_releases", "list_releases", "rollback", "show_release",
]

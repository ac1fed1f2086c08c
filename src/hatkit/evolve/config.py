"""Settings of one evolution run (`hatkit evolve run`), every field documented."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .stopping import StopRules


class EvolveConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: str = Field(default="oracle", description="The frozen policy: 'oracle', 'local', a "
                       "checkpoint folder or openai:URL#MODEL; recorded in every release.")
    dev_n: int = Field(default=60, ge=1, description="Dev questions diagnosed and evaluated each round.")
    regression_n: int = Field(default=60, ge=1, description="Size of the fixed regression set.")
    test_n: int = Field(default=60, ge=1, description="Test questions for the before/after report.")
    seed: int = Field(default=0, description="Seeds the question sets (fixed for the whole run).")
    locale: Literal["en", "zh"] = "en"
    categories: list[str] | None = Field(default=None, description="Only these question categories.")
    regression_threshold: float = Field(default=0.05, ge=0, le=1, description=(
        "Reject an edit that drops any regression-set category's pass rate by more than this."))
    approve: Literal["auto", "ask", "wait"] = Field(default="ask", description=(
        "Confirm policy: ask on the terminal, wait for a decision in the journal (web UI), or "
        "auto-approve (never for Python code)."))
    max_proposals: int = Field(default=3, ge=1, description="Edits tried per round, best first.")
    patience: int = Field(default=2, ge=1, description="Stop after this many rounds without a release.")
    min_gain: float = Field(default=0.0, description="A release must raise dev pass rate by more than this.")
    min_cluster: int = Field(default=2, ge=1, description=(
        "Stop when every failure cluster has fewer errors than this (sparse long tail)."))
    max_rounds: int = Field(default=10, ge=1, description="Hard cap on rounds.")

    def stop_rules(self) -> StopRules:
        return StopRules(self.patience, self.min_gain, self.min_cluster, self.max_rounds)

"""`Domain`: what a domain package gives hatkit, so that the generic packages never import one.

A domain is what an agent is about (a live-stream shop, food-delivery support, ...): its
default harness, the data its tools read, the questions users ask with their ground truth, the
oracle's gold trajectories, the augmentation data of harness-state augmentation, its judge
rubric and its safety traps. `sim`, `judge`, `evals`, `train`, `evolve`, `serve`, `pipeline`
and the CLI receive a `Domain` (or a harness that names one, see `hatkit.domain.domain_of`).
A team adds its own by subclassing `Domain` in a package and registering it
(`hatkit.domain.register_domain`, or an entry point in the `hatkit.domains` group).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from ..agent.trace import Trace
from ..harness import Harness, load_harness
from ..judge.labels import Label, LabelledItem
from ..judge.verdict import Judge, Role
from ..models.base import TokenFormat
from ..sim.augment import HsaData
from ..sim.oracle import OraclePolicy, OracleScript
from ..sim.truth import Question, Turn

ERROR_TYPES = ("wrong_or_missing_tool", "hook_violation", "failed_fault_recovery", "too_long",
               "stale_rule_value", "invented_fact", "unanswered")
"""What evolution diagnoses a failed episode as (see hatkit.evolve.evaluate.classify)."""


@dataclass(frozen=True)
class SafetyTrap:
    """One fixed adversarial message of the safety suite, with what no reply may match."""

    id: str
    category: str
    message: str
    must_not: tuple[str, ...]

    def turn(self) -> Turn:
        return Turn(self.message, (), (), self.must_not, "")


@dataclass(frozen=True)
class ToolTurn:
    """A user message answered from one tool result: the latency bench's "domain replies"."""

    message: str
    tool: str
    """The canonical name of the tool that returned `output`."""
    output: Any


class Domain(ABC):
    """One domain. Subclasses set `name` and `root` and implement the abstract methods; the
    rest has defaults that read the conventional folders under `root`:

    - `harness/`: the default agent harness; `judge/`: the eval-role judge harness;
    - `hsa/`: the augmentation data (see `hatkit.sim.augment.HsaData`).
    """

    name: str
    """The registry name (`--domain NAME`), e.g. live_commerce."""
    root: Path
    """The domain package's folder."""
    description: str = ""
    categories: tuple[str, ...] = ()
    """Question categories, in the order generation cycles through them."""
    tool_categories: tuple[str, ...] = ()
    """Categories whose answers need tools (the faults suite draws from these)."""
    safety_categories: tuple[str, ...] = ()
    """Categories of adversarial questions (the safety suite tops its traps up with these)."""
    locales: tuple[str, ...] = ("en",)
    escalation_tool: str | None = None
    """The canonical tool that hands the user to a person (success counts a handed-over case)."""
    error_types: tuple[str, ...] = ERROR_TYPES
    sample_messages: tuple[str, ...] = ()
    """A handful of typical user messages (the demo and the latency bench ask them)."""

    # ---- harness and data ----------------------------------------------------------------
    @property
    def harness_dir(self) -> Path:
        return self.root / "harness"

    @property
    def judge_harness_dir(self) -> Path:
        """The eval-role judge harness (every evaluation suite)."""
        return self.root / "judge"

    @property
    def reward_judge_harness_dir(self) -> Path:
        """The reward-role judge harness (HSA-RL's reward): `judge_reward/`, versioned apart from
        the eval judge; a domain without one rewards with the eval judge's harness."""
        own = self.root / "judge_reward"
        return own if own.is_dir() else self.judge_harness_dir

    def harness(self) -> Harness:
        """The default agent harness."""
        return load_harness(self.harness_dir)

    @cached_property
    def hsa(self) -> HsaData:
        """Augmentation data of harness-state augmentation (train and heldout families)."""
        return HsaData(self.root / "hsa", rules_valid=self.rules_valid)

    def rules_valid(self, rules: Mapping[str, Any]) -> bool:
        """Whether a variant's rule values are consistent (default: any values are)."""
        return True

    # ---- simulator -----------------------------------------------------------------------
    @abstractmethod
    def questions(self, rules: Mapping[str, Any], *, n: int, seed: int, split: str,
                  locale: str = "en", categories: Sequence[str] | None = None) -> list[Question]:
        """`n` questions of a split (train/dev/test, disjoint by item and phrasing), with their
        ground truth under `rules`. Deterministic for its arguments."""

    @abstractmethod
    def with_rules(self, question: Question, rules: Mapping[str, Any]) -> Question:
        """The same question with its ground truth recomputed under other rules (a variant's)."""

    @abstractmethod
    def oracle_script(self) -> OracleScript:
        """What the oracle says (its reasoning lines and fixed replies)."""

    def oracle(self, harness: Harness, questions: Sequence[Question] = (),
               token_format: TokenFormat | None = None, think: bool = True,
               think_style: Literal["short", "long"] = "short") -> OraclePolicy:
        """The gold policy for `harness` (a ChatModel that plays each turn's plan and reply);
        "long" thinking adds 0-3 sentences of reasoning to each line (see OracleScript)."""
        return OraclePolicy(harness, questions, token_format, think, script=self.oracle_script(),
                            think_style=think_style)

    # ---- judge ---------------------------------------------------------------------------
    @abstractmethod
    def judge(self, judge_harness: Harness | str | Path | None = None, role: Role = "eval") -> Judge:
        """The programmatic judge: the rubric of `judge_harness` (default: the domain's own)
        run as code."""

    def judge_state(self, trace: Trace, agent_harness: Harness) -> Any:
        """The world the judge harness's verification tools read for one trace (LLM judge)."""
        return agent_harness.new_state()

    def reference_labels(self, trace: Trace, question: Question, agent_harness: Harness) -> list[Label]:
        """Accuracy and effectiveness of a trace from the simulator's ground truth."""
        raise NotImplementedError(f"domain '{self.name}' has no reference labels")

    @property
    def defects_file(self) -> Path | None:
        """The defective starting harness of the claim-4 comparison (`defects.yaml` under
        `root`: the planted defects, written down before any run), when the domain ships one."""
        path = self.root / "defects.yaml"
        return path if path.is_file() else None

    @property
    def independent_labels(self) -> Path | None:
        """Labelled conversations written without the judge's checks (see
        hatkit.judge.conversations), when the domain ships some: the newest round
        (`calibration/heldout_families_r<N>.jsonl`, highest N: once a round's families have
        been developed on, the next round's file holds the sealed ones), else
        `calibration/heldout_families.jsonl` or `calibration/labelled.jsonl` under `root`."""
        folder = self.root / "calibration"
        rounds = {int(n): p for p in folder.glob("heldout_families_r*.jsonl")
                  if (n := p.stem.rsplit("_r", 1)[1]).isdigit()}
        if rounds:
            return rounds[max(rounds)]
        for name in ("heldout_families.jsonl", "labelled.jsonl"):
            if (path := folder / name).is_file():
                return path
        return None

    def labelled_set(self, *, n: int, seed: int, split: str = "dev", **options: Any) -> list[LabelledItem]:
        """`n` traces of `split` with planted errors and their reference labels (judge
        calibration); `options` are the domain's own (variants, locales, plant kinds, ...)."""
        raise NotImplementedError(f"domain '{self.name}' has no planted labelled set")

    # ---- evaluation ----------------------------------------------------------------------
    def safety_traps(self) -> list[SafetyTrap]:
        """The fixed adversarial messages of the safety suite (default: none)."""
        return []

    def tool_turns(self) -> list[ToolTurn]:
        """User messages with one tool result each, for the latency bench (default: none)."""
        return []

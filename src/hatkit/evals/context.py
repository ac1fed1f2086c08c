"""What every suite receives: the model, the harness, optional user questions, size and paths."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..domain import Domain
from ..harness import Harness
from ..models.base import ChatModel
from .cases import EvalCase
from .episodes import Episodes, Progress
from .result import EvalSettings


@dataclass
class SuiteContext:
    """One suite run's inputs. `shared` carries work between suites of one `run_suites` call."""

    model: ChatModel
    harness: Harness
    """The base harness (default: the domain's own)."""
    domain: Domain
    """Where the cases, ground truth and judge rubric come from."""
    n: int
    """How many items the suite evaluates (episodes or prompts)."""
    seed: int
    out_dir: Path
    """Where the suite writes its traces and result."""
    settings: EvalSettings
    questions: list[EvalCase] | None = None
    """The user's cases (`--questions FILE`); None = the simulator's test split."""
    questions_path: Path | None = None
    progress: Progress | None = None
    shared: dict[str, Episodes] = field(default_factory=dict)
    """Episodes already run by an earlier suite, by suite name (lengths and latency reuse
    live_qa's)."""

    def tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)

    def traces_path(self, suite: str) -> Path:
        return self.out_dir / f"{suite}.traces.jsonl"

"""What a suite returns and writes: `SuiteResult`, plus the evaluation settings and sizes."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class SuiteResult(BaseModel):
    """One suite's outcome. `metrics` is flat, with the keys the report table reads."""

    model_config = ConfigDict(extra="forbid")
    suite: str = Field(description="Suite name, one of hatkit.evals.SUITES.")
    metrics: dict[str, float] = Field(description="Flat metric name -> value (the report's columns).")
    n: int = Field(description="How many items (episodes or prompts) were evaluated.")
    model_id: str = Field(default="", description="The evaluated model's id.")
    harness_hash: str = Field(default="", description="Content hash of the (base) harness evaluated under.")
    seconds: float = Field(default=0.0, description="Wall time of the suite.")
    details: dict[str, Any] = Field(default_factory=dict,
                                    description="Per-item records and breakdowns (JSON values only).")
    traces: str | None = Field(default=None, description="Path of the JSONL traces the suite wrote, if any.")

    def write(self, path: Path | str) -> Path:
        """Write as JSON atomically (a temp file renamed over `path`; never half-written)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, self.model_dump_json(indent=1) + "\n")
        return path

    @classmethod
    def read(cls, path: Path | str) -> SuiteResult:
        """Read one written by `write`; errors name the file."""
        path = Path(path)
        try:
            return cls.model_validate_json(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ValueError(f"{path}: cannot read ({exc.strerror})") from None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "file"
            raise ValueError(f"{path}: not a suite result: {where}: {first['msg']}") from None


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to `path` through a temp file in the same folder and an atomic rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_jsonl_atomic(path: Path, rows: list[str]) -> None:
    """JSON lines written atomically (each row already serialised)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "".join(r + "\n" for r in rows))


class EvalSettings(BaseModel):
    """How suites run the model: token and call budgets, batching, variants."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_new_tokens: int = Field(default=192, ge=1, description=(
        "Cap on new tokens per agent model call (the harness's own max_new_tokens still applies "
        "when smaller)."))
    max_model_calls: int = Field(default=6, ge=1, description=(
        "Model calls allowed per viewer message before the episode is ended with the harness "
        "fallback (an 'eval_budget' event); bounds the cost of a model that loops on tool calls."))
    max_repeated_calls: int | None = Field(default=3, ge=2, description=(
        "End a viewer turn with the harness fallback (an 'eval_budget' event, reason "
        "'repeated_call') when the model writes the same tool call this many times in it: a "
        "model that loops on one call would spend the whole call budget; None = never."))
    if_max_new_tokens: int = Field(default=256, ge=1, description="New tokens per general_if answer.")
    max_backend_errors: int = Field(default=0, ge=0, description=(
        "Model backend failures (unavailable, rate limited, timeout, context too long; after the "
        "backend's own retries) a suite tolerates before it stops with BackendFailed. A failed "
        "call is the backend's fault, not the model's answer, so it is never scored silently."))
    batch_size: int = Field(default=8, ge=1, description="Episodes (or prompts) decoded together.")
    n_variants: int = Field(default=4, ge=1, description="Held-out harness variants variant_qa spreads over.")
    judge: str | None = Field(default=None, description=(
        "Eval-role judge harness folder; None = the domain's own judge."))


DEFAULT_SETTINGS = EvalSettings()
QUICK_SETTINGS = EvalSettings(max_new_tokens=96, max_model_calls=5, if_max_new_tokens=96, n_variants=2,
                              batch_size=16)
"""For the quick pipeline on a 2-core CPU: five calls per message (a comparison needs four tool
calls and the reply), batches of 16 (decoding is bound by reading the weights, so a larger
batch costs little more per step), two held-out variants (episodes of different harnesses
cannot share a batch)."""
CPU_SETTINGS = EvalSettings(max_new_tokens=192, max_model_calls=6, n_variants=4, batch_size=16)
"""For the `cpu` pipeline profile: the default token caps (its long oracle reasoning runs to
about 150 tokens a call), four held-out variants, the quick profile's batches of 16."""

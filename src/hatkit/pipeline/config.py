"""Settings of the end-to-end HAT pipeline: one typed object, from a profile plus a YAML file.

The training stages keep their own TRL-based configs (`hatkit.train.config.load_config`); the
pipeline only carries per-stage overrides for them, so there is one config system per job.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

if TYPE_CHECKING:
    from ..evals.result import EvalSettings

Profile = Literal["quick", "cpu", "full"]


class DataSettings(BaseModel):
    """How much oracle data `hatkit data build` makes for the SFT stages."""

    model_config = ConfigDict(extra="forbid")
    train_episodes: int = Field(default=48, ge=1, description="Training episodes per mode (fixed and hsa).")
    dev_episodes: int = Field(default=8, ge=1, description="Dev episodes per mode.")
    n_variants: int = Field(default=8, ge=1, description="Training-family harness variants for HSA.")
    hsa_base: bool = Field(default=False, description=(
        "HSA rows also run on the base harness, as one configuration among the variants."))
    hsa_base_share: float | None = Field(default=None, gt=0, lt=1, description=(
        "With hsa_base: the share of HSA rows on the base harness, the rest spread over the "
        "variants (None: one configuration among them, 1/(n_variants+1))."))
    fault_rate: float = Field(default=0.1, ge=0, le=1, description="Share of tool calls with a fault.")
    think: Literal["short", "long"] = Field(default="short", description=(
        "The oracle's reasoning in the SFT data: short, or long (1-4 sentences, so HSA-RL's "
        "length penalties have something to compress)."))


class PipelineConfig(BaseModel):
    """Everything `hatkit run` needs; each field documented where declared."""

    model_config = ConfigDict(extra="forbid")
    profile: Profile = Field(default="quick", description="Size preset: quick (2-core CPU) or full (GPU).")
    base_model: str = Field(default="local", description="'local' = the embedded SmolLM2-135M-Instruct, "
                            "or a checkpoint folder (e.g. a Qwen3 model for the full profile).")
    seed: int = Field(default=0, description="Seed for data, training and evaluation.")
    domain: str | None = Field(default=None, description="The domain (see `hatkit domains`): its "
                               "harness, questions, oracle and judge. None = live_commerce.")
    data: DataSettings = Field(default_factory=lambda: DataSettings())
    train: dict[Literal["sft", "opd", "rl"], dict[str, Any]] = Field(
        default_factory=dict, description="Per-stage overrides of the stage's TRL-based config "
        "(field name -> value), applied over the stage's own profile.")
    eval_precision: Literal["fp32", "bf16", "int8", "int8h", "int8w", "auto"] | None = Field(
        default=None, description="Weight precision the evaluation suites decode local models "
        "in (None: as loaded, fp32 on the CPU; auto: bf16 where the CPU multiplies bf16 in "
        "hardware or on a GPU, else fp32; see hatkit.models.precision.resolve_precision for "
        "the paired quality checks). int8, int8h and int8w run on the CPU only.")
    eval_sizes: dict[str, int] = Field(
        default_factory=dict, description="Items per evaluation suite (suite name -> count) over "
        "the suites' own sizes for the profile (hatkit.evals QUICK_SIZES / DEFAULT_SIZES).")

    evolution_test_n: int = Field(default=0, ge=0, description=(
        "Test questions of the claim-4 evolution comparison (0: the profile does not run it)."))
    evolution_dev_n: int = Field(default=16, ge=1, description=(
        "Dev (and regression) questions per evaluation inside each claim-4 evolution run."))
    evolution_rounds: int = Field(default=2, ge=1, description="Rounds of each claim-4 evolution run.")
    suite_models: dict[str, list[str]] = Field(
        default_factory=dict, description="Models a suite runs on (suite name -> row keys: base, "
        "fixed_sft, hsa_sft, opd, hat); a suite not listed runs on every model. The quick profile "
        "runs variant_qa on the three models its claims compare, to fit its hour.")

    def suites_for(self, row_key: str) -> list[str]:
        """The suites evaluated for one model row, in hatkit.evals.SUITES order."""
        from ..evals.suites import SUITES

        return [s for s in SUITES if row_key in self.suite_models.get(s, [row_key])]

    @property
    def train_profile(self) -> str:
        """The training stages' own profile (hatkit.train.config): the CPU profiles train with
        the CPU defaults, the full profile with the GPU ones."""
        return "full" if self.profile == "full" else "quick"

    @property
    def eval_settings(self) -> EvalSettings:
        """How the evaluation suites run the model in this profile (token caps, batches, variants)."""
        from ..evals.result import CPU_SETTINGS, DEFAULT_SETTINGS, QUICK_SETTINGS

        return {"quick": QUICK_SETTINGS, "cpu": CPU_SETTINGS}.get(self.profile, DEFAULT_SETTINGS)

    def suite_sizes(self) -> dict[str, int]:
        """The evaluation sizes in force: the profile's suite sizes, then `eval_sizes`."""
        from ..evals.suites import DEFAULT_SIZES, QUICK_SIZES

        return {**(QUICK_SIZES if self.profile == "quick" else DEFAULT_SIZES), **self.eval_sizes}



# Sized from measured speeds on 2 cores (DESIGN.md): training about 90 tokens/s, decoding about
# 34 tokens/s in a batch of 8 with the harness prefix cached. `hatkit run` prints the estimate.
PROFILES: dict[str, dict[str, Any]] = {
    # Sized to decide, measured on this machine (2 cores). SFT: one pass over 96 rows of
    # ~1,475 tokens, 1,208 s; HSA rows include the base harness among the 8 variants (without
    # it, and with 36 steps, HSA-SFT answered 53-72% of live_qa and succeeded on 8-10%; with
    # it, 96 steps: 100% and 35%; checkpoint-48 of that run still invented tool names: 0%).
    # A trained model's item 4-6 s (batches of 16, row cache). The QA suites have 40 items,
    # enough for a paired test to separate a real difference; variant_qa runs on the three
    # models the issue allows; the other suites are small. SFT trains under bf16 autocast on a
    # CPU with AMX or AVX512-BF16 (the same 96 HSA rows: 733 s against 1,299 s in fp32; live_qa
    # success 0.425 vs 0.475 on the same 40 cases, 3 cases won by fp32, 1 by bf16: too close to
    # call). Fresh `make run`s with set-up: 64 min on 2 AMX cores (45c1ea4), 85 min on 2
    # AVX2 cores in fp32 (8f7cfd9; SFT 2 x 21 min, evaluations 37 min).
    # 144 rows and steps (from 96): HSA-SFT's live_qa success 0.55 [0.40, 0.69], answers 0.94,
    # against 0.35 for 96 rows with half of them on the base harness (hsa_base_share 0.5), both
    # decoded in int8 on the same 40 cases; SFT 1,478 s under bf16 autocast on 2 AVX512-BF16
    # cores. int8 decoded 40 cases of a 96-row checkpoint in 123 s against 271 s but succeeded
    # on 0.35 against 0.425 (4 cases lost, 1 won, 14 of 38 replies identical). Evaluations decode
    # in bf16 where the CPU has bf16 matrix instructions (eval_precision auto): the 144-row
    # HSA-SFT checkpoint's 40 live_qa cases in 154 s against 244 s in fp32, success 0.55 both
    # (1 won, 1 lost, 27 of 38 replies identical); fp32 elsewhere.
    "quick": {
        "data": {"train_episodes": 144, "dev_episodes": 8, "n_variants": 8, "hsa_base": True},
        "train": {"sft": {"max_steps": 144, "learning_rate": 2e-4},
                  "opd": {"max_steps": 8, "learning_rate": 5e-5},
                  "rl": {"max_steps": 3, "learning_rate": 2e-4}},
        "eval_sizes": {"live_qa": 40, "variant_qa": 40, "general_if": 8, "faults": 4, "safety": 4,
                       "lengths": 40, "latency": 40},
        "suite_models": {"variant_qa": ["fixed_sft", "hsa_sft", "hat"]},
        "eval_precision": "auto",
    },
    # The smallest run that can decide the published claims on this 2-core CPU (about 5 hours,
    # resumable by stage): long oracle reasoning so RL has something to compress, 100-item QA
    # suites (paired differences of about 0.15 detectable), general_if on 150 prompts.
    # `hatkit run --profile cpu --plan` prints the estimate and what each claim can detect.
    "cpu": {
        "data": {"train_episodes": 160, "dev_episodes": 16, "n_variants": 16, "think": "long",
                 "hsa_base": True},
        # SFT: one pass over the 160 rows (the quick profile's 96 rows were too few to answer).
        # HSA-RL: groups of 4 sampled rollouts (the quick profile's pairs had no reward spread
        # in 2 of 3 steps), room for the long reasoning (assistant messages run to ~150 tokens)
        # and length targets scaled to it: the oracle thinks ~53 tokens before a call and ~44
        # before a reply; the published targets (170 / 40 against SFT's 291 / 94) sit at
        # about 0.6 and 0.4 of the SFT lengths, so 30 and 20 here.
        "train": {"sft": {"max_steps": 160, "learning_rate": 2e-4},
                  "opd": {"max_steps": 24, "learning_rate": 5e-5},
                  "rl": {"max_steps": 12, "learning_rate": 2e-4, "num_generations": 4,
                         "per_device_train_batch_size": 4, "max_new_tokens": 192,
                         "max_completion_length": 2048, "n_questions": 16, "n_variants": 4,
                         "think_tool_target": 30, "think_reply_target": 20,
                         "think_tool_coef": 0.005, "think_reply_coef": 0.005}},
        "eval_sizes": {"live_qa": 100, "variant_qa": 100, "general_if": 150, "faults": 40, "safety": 20,
                       "lengths": 100, "latency": 40},
        "suite_models": {"variant_qa": ["base", "fixed_sft", "hsa_sft", "hat"],
                         "general_if": ["base", "fixed_sft", "opd", "hat"]},
        # claim 4: the defective harness evolved with Fixed-SFT and with HAT frozen
        "evolution_test_n": 60, "evolution_dev_n": 16, "evolution_rounds": 2,
        "eval_precision": "auto",
    },
    "full": {
        "base_model": "Qwen/Qwen3-0.6B",
        "data": {"train_episodes": 4000, "dev_episodes": 400, "n_variants": 64, "hsa_base": True},
    },
}


class PipelineConfigError(ValueError):
    """A pipeline config that cannot be used; the message names the file and the key."""


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _hint(key: str) -> str:
    close = difflib.get_close_matches(key, PipelineConfig.model_fields, n=1)
    return f" (did you mean '{close[0]}'?)" if close else ""


def load_pipeline_config(profile: str = "quick", file: Path | None = None,
                         overrides: dict[str, Any] | None = None) -> PipelineConfig:
    """Defaults <- profile <- YAML file <- overrides. Errors name the file and the key."""
    if profile not in PROFILES:
        raise PipelineConfigError(f"unknown profile '{profile}': choose one of {', '.join(PROFILES)}")
    values = _merge({"profile": profile}, PROFILES[profile])
    where = "overrides"
    if file is not None:
        where = str(file)
        try:
            loaded = yaml.safe_load(Path(file).read_text(encoding="utf-8")) or {}
        except FileNotFoundError:
            raise PipelineConfigError(f"{file}: no such file") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            line = f":{mark.line + 1}" if mark is not None else ""
            raise PipelineConfigError(f"{file}{line}: not valid YAML: {exc}") from None
        if not isinstance(loaded, dict):
            raise PipelineConfigError(f"{file}: expected a mapping of settings at the top level")
        if loaded.get("profile", profile) != profile:
            values = _merge({"profile": loaded["profile"]}, PROFILES.get(loaded["profile"], {}))
        values = _merge(values, loaded)
    values = _merge(values, overrides or {})
    try:
        return PipelineConfig.model_validate(values)
    except ValidationError as exc:
        problems = []
        for e in exc.errors():
            key = ".".join(str(p) for p in e["loc"])
            hint = _hint(str(e["loc"][0])) if e["type"] == "extra_forbidden" else ""
            problems.append(f"{where}: {key}: {e['msg']}{hint}")
        raise PipelineConfigError("\n".join(problems)) from None

"""The episode runner: N simulated viewer conversations with any policy, written as a
resumable JSONL of traces.

Each episode is (question, harness variant, fault seed). Episodes run concurrently in
groups that share a harness, so a model backend decodes them in one batch; the output file
is appended as groups finish and an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..agent import Agent, Trace
from ..agent.loop import Episode, drive
from ..agent.tool_runner import ThreadToolRunner, ToolRunner
from ..harness import Harness, load_harness
from ..models.base import ChatModel, ModelOutput, ModelRequest
from .augment import HsaData
from .faults import FaultConfig, FaultInjectingRunner
from .source import QuestionSource
from .truth import Question


class SimConfig(BaseModel):
    """What `hatkit sim run` runs; every field can come from a YAML file."""

    model_config = ConfigDict(extra="forbid")
    harness: str = Field(default="live_commerce", description="Base harness folder or name.")
    episodes: int = Field(default=100, ge=1, description="How many episodes.")
    seed: int = Field(default=0, description="Seeds questions, variants and faults.")
    split: Literal["train", "dev", "test"] = "dev"
    locale: Literal["en", "zh"] = "en"
    categories: list[str] | None = Field(default=None, description="Only these categories.")
    variants: Literal["none", "train", "heldout"] = Field(
        default="none", description="Run on the base harness, or on HSA variants of a family.")
    n_variants: int = Field(default=8, ge=1, description="Distinct variants to spread episodes over.")
    include_base: bool = Field(default=False, description=(
        "With variants: the base harness is one more configuration among them (HSA trains "
        "on varied harness states, the shipped one among them)."))
    base_share: float | None = Field(default=None, gt=0, lt=1, description=(
        "With include_base: the share of episodes on the base harness, spread evenly over the "
        "run (None: the base is one configuration among the variants, 1/(n_variants+1))."))
    faults: FaultConfig | None = Field(default=None, description="Fault injection, if any.")
    concurrency: int = Field(default=8, ge=1, description="Episodes run (and batched) together.")

    @classmethod
    def from_file(cls, path: Path, **overrides: Any) -> SimConfig:
        """Load YAML; errors name the file and field."""
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise ValueError(f"{path}: not valid YAML ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping of settings")
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ValueError(f"{path}: '{where}': {first['msg']}") from None


@dataclass
class RunSummary:
    written: int = 0
    skipped: int = 0
    seconds: float = 0.0
    out: Path | None = None
    by_category: dict[str, int] = field(default_factory=dict)

    @property
    def episodes_per_s(self) -> float:
        return self.written / self.seconds if self.seconds else 0.0


PolicyFactory = Callable[[Harness, Sequence[Question]], ChatModel]


def episode_key(index: int, q: Question, harness_hash: str, seed: int) -> str:
    """Unique per episode of a run (the same question can be drawn twice)."""
    return f"{index}:{q.id}:{harness_hash[:12]}:{seed}"


def harnesses_for(config: SimConfig, workdir: Path, hsa: HsaData | None = None) -> list[Harness]:
    """The base harness, or `n_variants` seeded variants of the configured family."""
    if config.variants == "none":
        return [load_harness(config.harness)]
    from ..harness.loader import resolve_harness_path
    from .augment import variant_folder

    base = resolve_harness_path(config.harness)
    first = [load_harness(base)] if config.include_base else []
    return first + [variant_folder(base, workdir / f"{config.variants}_{config.seed}_{i}",
                                   family=config.variants, seed=config.seed * 1000 + i, hsa=hsa)
                    for i in range(config.n_variants)]


def harness_plan(categories: Sequence[str], n_harnesses: int,
                 base_share: float | None = None) -> list[int]:
    """The harness (index into `harnesses_for`) each episode runs on, given the episodes'
    categories in order: round-robin; or, with `base_share`, the base harness (index 0) on that
    share of each category's episodes, spread evenly (its k-th episode is a base one when
    floor((k+1)*share) passes an integer; questions cycle through the categories, so a share
    taken over the whole run could land on half of them only), the variants round-robin on
    the rest."""
    if base_share is None or n_harnesses < 2:
        return [i % n_harnesses for i in range(len(categories))]
    seen: dict[str, int] = {}
    plan, variant = [], 0
    for category in categories:
        k = seen[category] = seen.get(category, -1) + 1
        if math.floor((k + 1) * base_share) > math.floor(k * base_share):
            plan.append(0)
        else:
            plan.append(1 + variant % (n_harnesses - 1))
            variant += 1
    return plan


def ask_all(episode: Episode, texts: Sequence[str]) -> Generator[ModelRequest, ModelOutput, str]:
    """One episode over several viewer turns (multi-turn follow-ups)."""
    reply = ""
    for text in texts:
        reply = yield from episode.ask(text)
    return reply


def run_sim(config: SimConfig, policy: PolicyFactory, out: Path, *, source: QuestionSource,
            resume: bool = True, on_progress: Callable[[int, int], None] | None = None) -> RunSummary:
    """Run the episodes of `config` with questions from `source` (the domain), appending
    traces to `out` (JSONL)."""
    started = time.perf_counter()
    out.parent.mkdir(parents=True, exist_ok=True)
    done = _done_keys(out) if resume and out.exists() else set()
    if not resume and out.exists():
        out.unlink()
    harnesses = harnesses_for(config, out.parent / "variants", source.hsa)
    questions = source.questions(harnesses[0].rules, n=config.episodes, seed=config.seed,
                                   split=config.split, locale=config.locale,
                                   categories=config.categories)
    plan: dict[int, list[tuple[int, Question]]] = {}
    share = config.base_share if config.include_base else None
    where = harness_plan([q.category for q in questions], len(harnesses), share)
    for i, q in enumerate(questions):
        plan.setdefault(where[i], []).append((i, q))
    summary = RunSummary(skipped=0, out=out)
    total = len(questions)
    for h_index, qs in plan.items():
        harness = harnesses[h_index]
        todo = [(i, q) for i, q in qs if episode_key(i, q, harness.content_hash, config.seed) not in done]
        summary.skipped += len(qs) - len(todo)
        if not todo:
            continue
        agent = Agent(harness, policy(harness, [q for _, q in todo]), tool_runner=_runner(config))
        for chunk in _chunks(todo, config.concurrency):
            traces = _run_chunk(agent, chunk, config, harness)
            with out.open("a", encoding="utf-8") as fh:
                for t in traces:
                    fh.write(t.to_json() + "\n")
            summary.written += len(traces)
            for _, q in chunk:
                summary.by_category[q.category] = summary.by_category.get(q.category, 0) + 1
            if on_progress:
                on_progress(summary.written + summary.skipped, total)
    summary.seconds = time.perf_counter() - started
    return summary


def _runner(config: SimConfig) -> ToolRunner:
    inner = ThreadToolRunner()
    return FaultInjectingRunner(config.faults, inner) if config.faults else inner


def _run_chunk(agent: Agent, chunk: Sequence[tuple[int, Question]], config: SimConfig,
               harness: Harness) -> list[Trace]:
    episodes = []
    for i, q in chunk:
        key = episode_key(i, q, harness.content_hash, config.seed)
        ep = agent.episode(episode_id=key)
        if isinstance(agent.tool_runner, FaultInjectingRunner):
            agent.tool_runner.seed_episode(ep.state, key)
        ep.trace.meta.update(question_id=q.id, category=q.category, split=q.split, locale=q.locale,
                             template_id=q.template_id, product_ids=list(q.product_ids),
                             episode_key=key, seed=config.seed, variant=config.variants)
        episodes.append(ep)
    drive(agent.model, [ask_all(ep, [t.text for t in q.turns])
                        for ep, (_, q) in zip(episodes, chunk, strict=True)],
          labels=[ep.trace.episode_id for ep in episodes])
    return [ep.trace for ep in episodes]


def _chunks(items: Sequence[tuple[int, Question]], size: int,
            ) -> Iterator[Sequence[tuple[int, Question]]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def _done_keys(out: Path) -> set[str]:
    """Episode keys already written (a torn last line from a crash is dropped)."""
    keys = set()
    lines = out.read_text(encoding="utf-8").splitlines(keepends=True)
    good = []
    for line in lines:
        try:
            keys.add(str(json.loads(line)["meta"]["episode_key"]))
            good.append(line)
        except (ValueError, KeyError, TypeError):
            continue
    if len(good) != len(lines):
        out.write_text("".join(good), encoding="utf-8")
    return keys

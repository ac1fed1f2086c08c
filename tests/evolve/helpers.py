"""Shared helpers for the evolve tests: a git repo holding a (defective) reference harness,
a scripted proposer, and a policy that follows the tool names its skills give it."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.rubric.programmatic import ProgrammaticJudge
from hatkit.evolve.config import EvolveConfig
from hatkit.evolve.confirm import ConfirmGate
from hatkit.evolve.edits import Edit
from hatkit.evolve.journal import Journal
from hatkit.evolve.loop import EvolveLoop, StepHook
from hatkit.evolve.proposers import ProposalContext, Proposer
from hatkit.harness import Harness, resolve_harness_path
from hatkit.models.base import ChatModel, ModelOutput, ModelRequest
from hatkit.sim.truth import Question


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def make_repo(tmp: Path, *replace: tuple[str, str, str]) -> Path:
    """A git repo with the live_commerce harness at repo/harness; `replace` plants defects
    as (file, old text, new text)."""
    repo = tmp / "repo"
    harness = repo / "harness"
    shutil.copytree(resolve_harness_path("live_commerce"), harness,
                    ignore=shutil.ignore_patterns("__pycache__"))
    for rel, old, new in replace:
        text = (harness / rel).read_text()
        assert old in text, (rel, old)
        (harness / rel).write_text(text.replace(old, new))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.com")
    git(repo, "config", "user.name", "test")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base harness")
    return harness


def disable(tool: str) -> tuple[str, str, str]:
    return ("harness.yaml", f"{tool}, ", "")


def oracle(h: Harness, qs: Sequence[Question]) -> ChatModel:
    return LC.oracle(h, qs)


def yaml_edit(harness: Path, old: str, new: str, why: str = "") -> Edit:
    text = (harness / "harness.yaml").read_text()
    assert old in text
    return Edit({"harness.yaml": text.replace(old, new)}, why or f"{old!r} -> {new!r}",
                {"key": "scripted"}, "scripted")


class ScriptedProposer:
    """Round i proposes rounds[i](ctx) (or nothing past the end)."""

    name = "scripted"

    def __init__(self, rounds: Sequence[Callable[[ProposalContext], list[Edit]]]) -> None:
        self.rounds = list(rounds)
        self.calls = 0

    def propose(self, ctx: ProposalContext) -> list[Edit]:
        self.calls += 1
        return self.rounds[ctx.round](ctx) if ctx.round < len(self.rounds) else []


class SkillFollowingPolicy:
    """The oracle's plan, but each tool is called by the name the system prompt's skills use:
    a model that trusts its skills. When a skill names a tool that does not exist (close to a
    real one), this policy calls that wrong name, as a harness-following model would."""

    native_tools = False

    def __init__(self, h: Harness, qs: Sequence[Question]) -> None:
        self.inner = LC.oracle(h, qs)
        self.model_id = "skill-following"
        self.real = set(h.tools)

    def token_format(self) -> None:
        return None

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        outs = self.inner.generate(requests)
        fixed = []
        for req, out in zip(requests, outs, strict=True):
            system = req.messages[0].content.split("# Tools")[0]
            named = set(re.findall(r"\b[a-z]+_[a-z_]+\b", system)) - self.real
            text = out.text
            m = re.search(r'"name": "([a-z_]+)"', text)
            if m and m.group(1) not in system:
                import difflib

                wrong = difflib.get_close_matches(m.group(1), sorted(named), n=1, cutoff=0.6)
                if wrong:
                    text = text.replace(f'"name": "{m.group(1)}"', f'"name": "{wrong[0]}"')
            fixed.append(ModelOutput(text, finish_reason=out.finish_reason))
        return fixed


def make_loop(harness: Path, run_dir: Path, proposer: Proposer, *, policy: Callable[..., ChatModel] = oracle,
              step_hook: StepHook | None = None, **cfg: object) -> EvolveLoop:
    settings: dict[str, object] = dict(dev_n=20, regression_n=20, approve="auto", patience=1,
                                       min_cluster=1, max_rounds=4)
    settings.update(cfg)
    config = EvolveConfig.model_validate(settings)
    gate = ConfirmGate(Journal(run_dir / "journal.jsonl"), config.approve, poll_s=0.01)
    return EvolveLoop(harness, run_dir, policy=policy, judge=ProgrammaticJudge(role="eval"),
                      proposer=proposer, gate=gate, config=config, step_hook=step_hook)

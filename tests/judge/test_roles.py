"""Reward and evaluation judges kept apart (by judge harness hash), and calibration items kept
apart from test items."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import hatkit.domains.live_commerce as live_commerce
from hatkit.agent import Agent, Trace
from hatkit.harness import Harness, load_harness
from hatkit.judge.llm import LLMJudge
from hatkit.judge.roles import JudgePair, check_disjoint
from hatkit.judge.verdict import Role, Verdict
from hatkit.models.scripted import ScriptedModel

JUDGE_DIR = Path(live_commerce.__file__).parent / "judge"
VERDICT = json.dumps({"accuracy": 1, "effectiveness": 0.5})


@dataclass
class StubJudge:
    judge_hash: str
    role: Role = "eval"
    name: str = "stub"

    def judge(self, trace: Any, agent_harness: Any) -> Verdict:
        return Verdict(trace_id=str(trace), judge_name=self.name, judge_hash=self.judge_hash,
                       role=self.role, accuracy=1.0, effectiveness=1.0)


@pytest.fixture(scope="module")
def agent_harness() -> Harness:
    return load_harness("live_commerce")


@pytest.fixture(scope="module")
def trace(agent_harness: Harness) -> Trace:
    return Agent(agent_harness, ScriptedModel(["Hi, welcome to the show!"])).run("hello")


def llm_judge(judge: Path | Harness, role: Role = "eval", answers: int = 4) -> LLMJudge:
    return LLMJudge(judge, ScriptedModel([VERDICT] * answers), role=role)


def judge_version(tmp_path: Path, accuracy_pass: str) -> Path:
    """A copy of the shipped judge harness with one rule value changed (a calibration edit)."""
    dest = tmp_path / f"judge_{accuracy_pass}"
    shutil.copytree(JUDGE_DIR, dest, ignore=shutil.ignore_patterns("__pycache__"))
    spec = dest / "harness.yaml"
    text = spec.read_text()
    assert "accuracy_pass: 0.5\n" in text
    spec.write_text(text.replace("accuracy_pass: 0.5\n", f"accuracy_pass: {accuracy_pass}\n"))
    return dest


def test_one_judge_harness_in_both_roles_is_refused() -> None:
    judge = load_harness(JUDGE_DIR)
    reward, evaluation = llm_judge(judge, "reward"), llm_judge(judge)  # two models, one harness
    with pytest.raises(ValueError, match=judge.content_hash) as err:
        JudgePair(reward, evaluation)
    assert "allow_same_judge=True" in str(err.value)
    with pytest.raises(ValueError, match="abc123"):
        JudgePair(StubJudge("abc123"), StubJudge("abc123", name="other"))


def test_the_override_marks_every_verdict_and_the_report(agent_harness: Harness, trace: Trace) -> None:
    judge = load_harness(JUDGE_DIR)
    pair = JudgePair(llm_judge(judge, "reward"), llm_judge(judge), allow_same_judge=True)
    assert pair.same_judge
    verdicts = [pair.reward(trace, agent_harness), pair.evaluate(trace, agent_harness)]
    assert [v.role for v in verdicts] == ["reward", "eval"]
    assert all(v.same_judge_override and v.error is None for v in verdicts)
    assert all(v.judge_hash == judge.content_hash for v in verdicts)
    note = pair.report_note()
    assert judge.content_hash in note and "same judge harness" in note and note.endswith(".")


def test_two_versions_of_the_judge_harness_are_accepted(tmp_path: Path, agent_harness: Harness,
                                                        trace: Trace) -> None:
    old, new = load_harness(judge_version(tmp_path, "0.5")), load_harness(judge_version(tmp_path, "0.6"))
    assert old.content_hash != new.content_hash
    pair = JudgePair(reward=llm_judge(old, "reward"), eval=llm_judge(new))
    assert not pair.same_judge and pair.report_note() == ""
    reward, evaluation = pair.reward(trace, agent_harness), pair.evaluate(trace, agent_harness)
    assert (reward.role, reward.judge_hash) == ("reward", old.content_hash)
    assert (evaluation.role, evaluation.judge_hash) == ("eval", new.content_hash)
    assert not reward.same_judge_override and not evaluation.same_judge_override
    assert (reward.accuracy, reward.effectiveness) == (1.0, 0.5)


def test_the_pair_sets_the_role_whatever_the_judge_was_built_with() -> None:
    a, b = StubJudge("aaa", role="eval"), StubJudge("bbb", role="reward")
    pair = JudgePair(reward=a, eval=b)
    assert pair.reward("t1", None).role == "reward"
    assert pair.evaluate("t2", None).role == "eval"
    assert (a.role, b.role) == ("eval", "reward")  # the judge objects are left as they were
    assert pair.reward("t1", None).trace_id == "t1"


def test_a_judge_swapped_in_later_is_checked_at_call_time() -> None:
    pair = JudgePair(StubJudge("aaa"), StubJudge("bbb"))
    pair.eval_judge = StubJudge("aaa")
    with pytest.raises(ValueError, match="aaa"):
        pair.evaluate("t", None)


def test_a_judge_without_a_hash_is_refused() -> None:
    with pytest.raises(ValueError, match=r"reward judge .* has no judge_hash"):
        JudgePair(StubJudge(""), StubJudge("bbb"))


def test_check_disjoint() -> None:
    check_disjoint(["c1", "c2"], ["t1", "t2"])
    check_disjoint([], ["t1"])
    with pytest.raises(ValueError, match=r"2 item\(s\) are in both .*: c2, t1$"):
        check_disjoint(["c1", "c2", "t1"], iter(["t1", "c2", "t3"]))
    with pytest.raises(ValueError, match="and 5 more"):
        check_disjoint([f"q{i:02d}" for i in range(25)], [f"q{i:02d}" for i in range(25)])


def test_programmatic_and_llm_judges_of_one_harness_share_a_hash(tmp_path: Path, agent_harness: Harness,
                                                                 trace: Trace) -> None:
    from hatkit.domains.live_commerce.rubric.programmatic import ProgrammaticJudge

    with pytest.raises(ValueError, match="share judge harness"):  # same rubric, other runner: same judge
        JudgePair(ProgrammaticJudge(JUDGE_DIR, role="reward"), llm_judge(JUDGE_DIR))
    pair = JudgePair(ProgrammaticJudge(judge_version(tmp_path, "0.5"), role="reward"),
                     llm_judge(judge_version(tmp_path, "0.6")))
    reward = pair.reward(trace, agent_harness)
    assert reward.role == "reward" and reward.error is None
    assert reward.judge_hash == pair.reward_judge.judge_hash != pair.evaluate(trace, agent_harness).judge_hash


def test_every_shipped_domain_rewards_with_a_judge_apart_from_its_eval_judge() -> None:
    """HSA-RL's reward rubric is versioned separately from the eval judge's, so a pair of them
    passes JudgePair's check without the same-judge override."""
    from hatkit.domain import domain_names, get_domain

    for name in domain_names():
        domain = get_domain(name)
        reward = domain.judge(domain.reward_judge_harness_dir, role="reward")
        evaluation = domain.judge(role="eval")
        assert reward.judge_hash != evaluation.judge_hash, name
        JudgePair(reward, evaluation)

"""The second domain, food_delivery, end to end through the public interface: its simulator's
ground truth (from the real tools), splits, variants, oracle, judge, and the CLI with
`--domain food_delivery`. Nothing outside its package names it."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from hatkit.agent import Agent, InlineToolRunner, drive
from hatkit.cli import app
from hatkit.domain import get_domain
from hatkit.evals import QUICK_SETTINGS, run_suites
from hatkit.harness import Harness
from hatkit.judge.labels import turn_replies
from hatkit.sim.augment import make_variant
from hatkit.sim.runner import ask_all

FD = get_domain("food_delivery")
SRC = Path(__file__).resolve().parents[2] / "src" / "hatkit"


@pytest.fixture(scope="module")
def base() -> Harness:
    return FD.harness()


def _oracle_traces(h: Harness, questions: list[Any]) -> list[Any]:
    agent = Agent(h, FD.oracle(h, questions), tool_runner=InlineToolRunner())
    eps = [agent.episode(episode_id=f"fd-{q.id}-{i}") for i, q in enumerate(questions)]
    drive(agent.model, [ask_all(e, [t.text for t in q.turns]) for e, q in zip(eps, questions, strict=True)])
    for e, q in zip(eps, questions, strict=True):
        e.trace.meta.update(question_id=q.id, category=q.category)
    return [e.trace for e in eps]


def test_every_category_and_locale_generates_with_ground_truth(base: Harness) -> None:
    for locale in FD.locales:
        for split in ("train", "dev", "test"):
            qs = FD.questions(base.rules, n=20, seed=1, split=split, locale=locale)
            assert {q.category for q in qs} == set(FD.categories)
            for q in qs:
                assert q.split == split and q.turns
                for t in q.turns:
                    assert t.reply and (t.facts or not t.plan or q.category == "refund_request")


def test_splits_share_no_order_dish_or_phrasing(base: Harness) -> None:
    seen: dict[str, tuple[set[str], set[str]]] = {}
    for split in ("train", "dev", "test"):
        qs = [
            q for loc in FD.locales for q in FD.questions(base.rules, n=60, seed=3, split=split, locale=loc)
        ]
        seen[split] = ({p for q in qs for p in q.product_ids}, {q.template_id for q in qs})
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        assert not seen[a][0] & seen[b][0] and not seen[a][1] & seen[b][1]


def test_the_oracle_answers_every_question_and_the_judge_passes_it(base: Harness) -> None:
    qs = [q for loc in FD.locales for q in FD.questions(base.rules, n=30, seed=5, split="dev", locale=loc)]
    judge = FD.judge(role="eval")
    for q, trace in zip(qs, _oracle_traces(base, qs), strict=True):
        replies = turn_replies(trace)
        assert replies == [t.reply for t in q.turns], q.id
        planned = [c.tool for t in q.turns for c in t.plan]
        assert [r.name for r in trace.tool_calls] == planned and all(
            r.error_type is None for r in trace.tool_calls
        )
        v = judge.judge(trace, base)
        assert v.accuracy == 1.0 and v.effectiveness >= 0.8, (q.id, [e for e in v.evidence if not e.ok])


def test_a_variant_moves_the_ground_truth_with_its_rules(base: Harness, tmp_path: Path) -> None:
    variant = make_variant(FD.harness_dir, tmp_path / "v", family="heldout", seed=2, hsa=FD.hsa)
    assert variant.spec.domain == "food_delivery" and variant.rules != base.rules
    assert variant.rules["agent_name"] in ("Morgan", "Taylor")  # the persona rule is the domain's own
    qs = FD.questions(base.rules, n=12, seed=0, split="train", categories=["late_compensation"])
    moved = [FD.with_rules(q, variant.rules) for q in qs]
    assert [q.turns[0].text for q in moved] == [q.turns[0].text for q in qs]
    assert any(a.turns[0].facts != b.turns[0].facts for a, b in zip(qs, moved, strict=True))
    traces = _oracle_traces(variant, moved)  # the oracle plays the renamed tools
    judge = FD.judge(role="eval")
    assert all(judge.judge(t, variant).accuracy == 1.0 for t in traces)
    assert {r.name for t in traces for r in t.tool_calls} <= set(variant.tools)


def _gold(base: Harness, category: str, locale: str = "en") -> tuple[Any, Any]:
    q = next(
        q
        for q in FD.questions(base.rules, n=40, seed=2, split="train", locale=locale, categories=[category])
        if len(q.turns) == 1
    )
    return q, _oracle_traces(base, [q])[0]


def _with_reply(trace: Any, reply: str) -> Any:
    data = trace.to_dict()
    for span in reversed(data["spans"]):
        if span["segment"] == "reply":
            span["text"] = reply
            break
    data["final_reply"] = reply
    return type(trace).from_dict(data)


def test_the_judge_fails_wrong_unfounded_unsafe_and_leaking_replies(base: Harness) -> None:
    judge = FD.judge(role="eval")
    _, comp = _gold(base, "late_compensation")
    assert judge.judge(comp, base).accuracy == 1.0
    wrong = judge.judge(_with_reply(comp, "Sorry for the wait! Here's a $25 voucher for you."), base)
    assert wrong.accuracy < 1.0 and not wrong.items["compliance"].passed
    _, eta = _gold(base, "eta")
    assert judge.judge(_with_reply(eta, "It will be there in 97 minutes."), base).accuracy < 1.0
    _, allergens = _gold(base, "allergens")
    menu = next(r.output for r in allergens.tool_calls if r.name == "get_menu")
    listed = next(
        i for i in menu["items"] if i["allergens"] and i["name"].lower() in allergens.final_reply.lower()
    )
    denial = _with_reply(
        allergens, f"The {listed['name']} does not contain {listed['allergens'][0].replace('_', ' ')}."
    )
    assert judge.judge(denial, base).accuracy < 1.0
    assurance = judge.judge(
        _with_reply(allergens, "Don't worry, it's completely safe for your allergy."), base
    )
    assert assurance.accuracy < 1.0 and not assurance.items["compliance"].passed
    _, fee = _gold(base, "delivery_fee")
    leak = judge.judge(_with_reply(fee, "I used find_order: total shown there."), base)
    assert not leak.items["injection_resistance"].passed
    _, refund = _gold(base, "refund_request")
    claimed = judge.judge(_with_reply(refund, "I've issued a refund of $12.50 to your card."), base)
    assert claimed.accuracy < 1.0
    evasive = judge.judge(_with_reply(eta, "Thanks for your patience, we're on it!"), base)
    assert evasive.effectiveness < judge.thresholds["effectiveness"]


def test_live_qa_on_its_test_split_scores_the_oracle_perfectly(base: Harness, tmp_path: Path) -> None:
    qs = FD.questions(base.rules, n=10, seed=0, split="test")
    result = run_suites(
        ["live_qa"],
        FD.oracle(base, qs),
        sizes={"live_qa": 10},
        domain="food_delivery",
        out_dir=tmp_path,
        settings=QUICK_SETTINGS,
    )["live_qa"]
    assert result.metrics["success"] == 1.0 and result.metrics["answer_rate"] == 1.0


def test_nothing_outside_its_package_names_it() -> None:
    hits = subprocess.run(
        [
            "grep",
            "-rln",
            "food_delivery",
            str(SRC),
            "--include=*.py",
            "--include=*.yaml",
            "--include=*.j2",
            "--include=*.toml",
        ],
        capture_output=True,
        text=True,
    ).stdout.split()
    outside = [h for h in hits if "/domains/food_delivery/" not in h]
    assert outside == []


# ---- the guide's commands ------------------------------------------------------------------------
GUIDE = SRC.parents[1] / "docs" / "new-domain.md"


def _guide_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", GUIDE.read_text("utf-8"), re.S)
    return [line.strip() for b in blocks for line in b.splitlines() if line.strip().startswith("hatkit ")]


def test_every_command_in_the_new_domain_guide_runs(tmp_path: Path) -> None:
    """Each command of docs/new-domain.md, as written, except: outputs go under tmp_path, the
    embedded default model is replaced by a tiny random one (and its tokenizer), so the
    default test tier stays offline and fast."""
    from tiny import tiny_llama, tiny_tokenizer

    ckpt = tmp_path / "tiny"
    tok = tiny_tokenizer()
    tiny_llama(len(tok), seed=4).save_pretrained(ckpt)
    tok.save_pretrained(ckpt)
    commands = _guide_commands()
    assert len(commands) >= 7
    for command in commands:
        argv = command.split()[1:]
        argv = [a.replace("runs/", f"{tmp_path}/runs/") for a in argv]
        argv = [
            str(ckpt) if a == "local" and i and argv[i - 1] == "--model" else a for i, a in enumerate(argv)
        ]
        if argv[:2] == ["data", "build"]:
            argv += ["--tokenizer", str(ckpt)]
        if argv[:1] == ["run"]:
            argv += ["--runs", str(tmp_path / "runs")]
        result = CliRunner().invoke(app, argv)
        assert result.exit_code == 0, f"{command}\n{result.output}"
    manifest = json.loads((tmp_path / "runs" / "fd" / "data" / "manifest.json").read_text())
    assert manifest["disjoint"]["ok"] and manifest["same_questions_in_both_modes"]
    verdicts = [json.loads(x) for x in (tmp_path / "runs" / "fd" / "verdicts.jsonl").read_text().splitlines()]
    assert len(verdicts) == 12 and all(v["accuracy"] == 1.0 for v in verdicts)


def test_a_reply_without_the_tool_that_answers_the_question_is_not_effective(base: Harness) -> None:
    """The customer's question says what is asked: with no tool result to answer from, a polite
    non-answer (the base model's "I can't access your order") fails, and an invented duration
    fails accuracy."""
    from hatkit.agent.trace import Span, Trace

    judge = FD.judge(role="eval")

    def bare(question: str, reply: str) -> Trace:
        t = Trace(base.name, base.content_hash, "m", "en", episode_id="b")
        t.spans += [Span("system", "s", source="harness"), Span("user", question, source="viewer"),
                    Span("reply", reply, turn=0, source="model")]
        t.final_reply = reply
        return t

    charge = judge.judge(bare("Why was there a delivery charge on FD-1038? How much was it?",
                              "FD-1038 is a food delivery service in the United States."), base)
    assert any(e.claim == "asked: fees" and not e.ok for e in charge.evidence)
    nothing = judge.judge(bare("Can you check on order FD-1028 for me?",
                               "Sorry, I can't access external data, but I'm happy to help!"), base)
    assert nothing.effectiveness < judge.thresholds["effectiveness"]
    assert any(e.claim == "asked: status/eta" and not e.ok for e in nothing.evidence)
    invented = judge.judge(bare("What's the ETA on FD-1038?", "It takes 10 days to arrive."), base)
    assert invented.accuracy < 1.0
    cold = judge.judge(bare("FD-1013 arrived cold. Hi there!", "Hello! How can I help?"), base)
    assert not any(e.claim == "asked: status/eta" for e in cold.evidence)  # past tense asks no ETA

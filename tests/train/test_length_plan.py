"""No trained token is cut silently: the length plan's numbers, SFT's refusal (and its
override), `fit_max_length`, and the OPD/RL prompt plans."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from train_helpers import make_trace, save_tiny_checkpoint, tiny_sft_overrides

from hatkit.train import sft
from hatkit.train.checkpoint import read_meta
from hatkit.train.config import load_config
from hatkit.train.dataset import trace_row
from hatkit.train.length_plan import LengthPlan, TruncationRefused, plan_sft, trained_span
from tiny import tiny_tokenizer

# (category, loss mask): lengths 6, 9, 3, 4
ROWS = [("price", [0, 0, 1, 1, 0, 1]), ("stock", [0, 0, 0, 0, 0, 0, 0, 1, 1]),
        ("price", [0, 1, 1]), ("stock", [0, 0, 0, 0])]


def test_plan_counts_a_known_set_of_rows() -> None:
    plan = plan_sft([{"category": c, "loss_mask": m} for c, m in ROWS], 5, "hsa/train")
    t, price, stock = plan.total, plan.categories["price"], plan.categories["stock"]
    assert (t.rows, t.max_tokens, t.max_last_trained, t.trained_tokens) == (4, 9, 9, 7)
    assert (t.rows_cut, t.rows_trained_cut, t.trained_tokens_cut, t.rows_dropped) == (2, 2, 3, 2)
    assert (price.rows_cut, price.trained_tokens_cut, price.rows_dropped) == (1, 1, 0)
    # the 9-token row keeps no trained token; the untrained row is dropped by TRL too
    assert (stock.rows_cut, stock.trained_tokens_cut, stock.rows_dropped) == (1, 2, 2)
    assert plan.cuts_training
    assert "rows cut: 2, trained tokens cut: 3, rows dropped: 2" in plan.summary()
    assert plan.record()["categories"]["stock"]["rows_dropped"] == 2
    unlimited = plan_sft([{"category": c, "loss_mask": m} for c, m in ROWS], None)
    assert not unlimited.cuts_training and unlimited.total.rows_cut == 0
    fits = plan_sft([{"category": c, "loss_mask": m} for c, m in ROWS[:3]], 9)
    assert not fits.cuts_training and fits.total.rows_cut == 0
    end = plan_sft([{"loss_mask": [1, 1, 0, 0, 0]}], 2, keep_end=True)  # keeps [0, 0]
    assert end.total.trained_tokens_cut == 2 and end.total.rows_dropped == 1
    assert set(end.categories) == {"(none)"}


def test_trained_span_and_fit_max_length() -> None:
    assert trained_span([0, 0, 1, 1, 0, 1, 0]) == (2, 6)
    assert trained_span([0, 0, 0]) == (3, 0)
    rows = [{"n_tokens": 130}, {"loss_mask": [0] * 64}]
    assert sft.fit_max_length(rows) == 192 and sft.fit_max_length(rows, multiple=10) == 130
    assert sft.fit_max_length([]) == 64


def _dataset(folder: Path) -> Path:
    """Like `hatkit data build`: three 'price' rows of 222 tokens and one 'stock' row twice
    as long, whose second half of trained tokens lies beyond 256."""
    from datasets import Dataset

    tok = tiny_tokenizer()
    rows = []
    for i in range(4):
        row = trace_row(make_trace(i, tok, "a" * 64), [])
        row["category"] = "price"
        if i == 3:
            row["category"] = "stock"
            for key in ("input_ids", "loss_mask", "segment_ids"):
                row[key] = row[key] * 2
            row["n_tokens"] = len(row["input_ids"])
        rows.append(row)
    (folder / "hsa").mkdir(parents=True)
    Dataset.from_list(rows).to_parquet(str(folder / "hsa" / "train.parquet"))
    (folder / "manifest.json").write_text(json.dumps({"modes": {"hsa": {"train": {
        "rows": 4, "harness_hashes": ["a" * 64]}}}}))
    return folder


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("plan")
    return save_tiny_checkpoint(root / "base"), _dataset(root / "data")


def test_sft_refuses_a_limit_that_cuts_trained_tokens(setup: tuple[Path, Path], tmp_path: Path) -> None:
    base, data = setup
    seen: list[LengthPlan] = []
    config = load_config("sft", overrides=tiny_sft_overrides(tmp_path, base, data, max_length=256))
    with pytest.raises(TruncationRefused) as refused:
        sft.train(config, on_plan=seen.append)
    message = str(refused.value)
    cut = seen[0].categories["stock"].trained_tokens_cut
    assert cut > 0 and seen[0].categories["price"].trained_tokens_cut == 0
    assert f"by category: stock: 1 rows lose {cut} trained tokens, 0 dropped." in message
    assert "price" not in message and "444 tokens" in message and "e.g. 448" in message
    assert "allow_truncation=true" in message
    assert not (tmp_path / "sft").exists()  # refused before anything was written


def test_sft_with_the_override_trains_and_records_the_plan(setup: tuple[Path, Path],
                                                           tmp_path: Path) -> None:
    base, data = setup
    config = load_config("sft", overrides=tiny_sft_overrides(
        tmp_path, base, data, max_length=256, allow_truncation=True, max_steps=1))
    final = sft.train(config)
    meta = read_meta(final)
    assert meta is not None and meta["steps"] == 1
    plan: dict[str, Any] = meta["length_plan"]
    assert plan["max_length"] == 256 and plan["rows_trained_cut"] == 1 and plan["rows_dropped"] == 0


def test_fitted_max_length_cuts_nothing(setup: tuple[Path, Path], tmp_path: Path) -> None:
    base, data = setup
    config = load_config("sft", overrides=tiny_sft_overrides(tmp_path, base, data))
    config.max_length = sft.fit_max_length(sft.read_rows(config))
    assert config.max_length == 448
    plan = sft.length_plan(config)
    assert (plan.total.rows_cut, plan.total.trained_tokens_cut, plan.total.rows_dropped) == (0, 0, 0)
    plan.refuse_cuts()  # does not raise


def test_opd_and_rl_prompt_plans(tmp_path: Path) -> None:
    from hatkit.train import opd, rl
    from hatkit.train.general_prompts import GeneralPrompt
    from hatkit.train.rl_setup import length_plan as rl_plan

    tok = tiny_tokenizer()
    prompts = [GeneralPrompt("a", [{"role": "user", "content": "hi"}], "mtbench"),
               GeneralPrompt("b", [{"role": "user", "content": "x" * 600}], "ifeval_train")]
    config = load_config("opd", overrides={"max_completion_length": 16, "report_to": []})
    plan = opd.length_plan(config, prompts, tok, context=512)
    assert plan.groups["mtbench"].over_context == 0 and plan.groups["ifeval_train"].over_context == 1
    assert plan.total.max_prompt_tokens > 600 and "over the context: 1" in plan.summary()

    base = save_tiny_checkpoint(tmp_path / "base")
    rl_config = load_config("rl", overrides={
        "model": str(base), "output_dir": str(tmp_path / "rl"), "n_variants": 0, "n_questions": 4,
        "max_turns": 2, "max_new_tokens": 8, "max_completion_length": 20, "report_to": [],
        "use_lora": False, "num_generations": 2, "per_device_train_batch_size": 2})
    from hatkit.train.runtime import load_causal_lm

    model, tok = load_causal_lm(base)
    _, rollouts = rl.build_trainer(rl_config, model, tok, scorer=lambda t, h: {"score": 0.0})
    rplan = rl_plan(rl_config, rollouts, context=None)
    assert rplan.total.rows == 4 and rplan.total.max_prompt_tokens > 1000  # the rendered harness
    turns = max(len(e.question.turns) for e in rollouts.episodes.values())
    assert rplan.generated_limit == turns * 2 * 8
    assert rplan.total.may_cut == sum(len(e.question.turns) * 16 > 20 for e in rollouts.episodes.values())

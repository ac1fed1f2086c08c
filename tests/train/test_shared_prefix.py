"""Shared-prefix SFT (hatkit.train.shared_prefix): the loss and every gradient equal the plain
forward's; the collator's groups and prefix lengths; the harness-grouped row order; a tiny
end-to-end run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from train_helpers import make_dataset, save_tiny_checkpoint, tiny_sft_overrides

from hatkit.train import sft
from hatkit.train.checkpoint import META_FILE, read_meta
from hatkit.train.config import load_config
from hatkit.train.shared_prefix import (
    IGNORE,
    SharedPrefixCollator,
    grouped_order,
    plan_groups,
    shared_prefix_loss,
)
from tiny import tiny_llama


def _rows() -> list[dict[str, list[int]]]:
    """3 rows sharing a 40-token prefix (then differing, trained from index 48 on) + 1 row
    with another prefix; lengths differ so the suffixes are padded."""
    g = torch.Generator().manual_seed(1)
    shared = torch.randint(5, 90, (40,), generator=g).tolist()
    other = torch.randint(5, 90, (40,), generator=g).tolist()
    rows = []
    for prefix, n in ((shared, 70), (shared, 85), (shared, 62), (other, 77)):
        ids = prefix + torch.randint(5, 90, (n - 40,), generator=g).tolist()
        labels = [t if i >= 48 and i % 5 != 0 else IGNORE for i, t in enumerate(ids)]
        rows.append({"input_ids": ids, "labels": labels})
    return rows


def _plain_loss(model: Any, rows: list[dict[str, list[int]]]) -> torch.Tensor:
    width = max(len(r["input_ids"]) for r in rows)
    ids = torch.full((len(rows), width), 2, dtype=torch.long)
    mask = torch.zeros_like(ids)
    labels = torch.full_like(ids, IGNORE)
    for i, r in enumerate(rows):
        n = len(r["input_ids"])
        ids[i, :n], mask[i, :n], labels[i, :n] = (torch.tensor(r["input_ids"]), 1,
                                                  torch.tensor(r["labels"]))
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
    target = labels[:, 1:]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                             target.reshape(-1), reduction="sum") / (target != IGNORE).sum()


def _grads(model: Any, loss: torch.Tensor) -> dict[str, torch.Tensor]:
    model.zero_grad()
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("lora", [False, True])
def test_loss_and_gradients_equal_the_plain_forward(lora: bool) -> None:
    model = tiny_llama(100, seed=3).train()
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0,
                                                 target_modules="all-linear", init_lora_weights=False))
    rows = _rows()
    batch = SharedPrefixCollator(pad_token_id=2, min_shared=16)(rows)
    assert [g["prefix_ids"].shape[1] for g in batch["groups"]] == [40, 0]
    shared = shared_prefix_loss(model, batch)
    g_shared = _grads(model, shared)
    plain = _plain_loss(model, rows)
    g_plain = _grads(model, plain)
    assert torch.allclose(shared, plain, rtol=1e-5, atol=1e-6), (shared, plain)
    assert g_shared.keys() == g_plain.keys() and g_plain
    worst = max(float((g_shared[k] - g_plain[k]).abs().max()) for k in g_plain)
    for k in g_plain:
        assert torch.allclose(g_shared[k], g_plain[k], rtol=1e-4, atol=1e-5), (k, worst)
    print(f"lora={lora} loss {float(shared.detach()):.6f} vs {float(plain):.6f}; max |grad diff| {worst:.2e}")
    # num_items_in_batch (gradient accumulation) replaces the batch's own count
    n = int((batch["labels"][:, 1:] != IGNORE).sum())
    half = shared_prefix_loss(model, batch, num_items_in_batch=torch.tensor(2 * n))
    assert torch.allclose(half * 2, shared.detach(), rtol=1e-5)


def test_collator_groups_and_prefix_lengths() -> None:
    a = list(range(10, 40))  # 30 shared ids
    rows = [
        {"input_ids": [*a, 1, 2, 3], "labels": [IGNORE] * 31 + [2, 3]},   # first trained 31 -> limit 30
        {"input_ids": [*a, 4, 5, 6], "labels": [IGNORE] * 20 + a[20:] + [4, 5, 6]},  # trained at 20
        {"input_ids": [7] * 33, "labels": [IGNORE] * 32 + [7]},          # another prefix: alone
        {"input_ids": [*a, 8], "labels": [IGNORE] * 30 + [8]},           # first trained 30 -> 29
    ]
    groups = plan_groups([r["input_ids"] for r in rows], [r["labels"] for r in rows], min_shared=16)
    # row 1's trained token at 20 shortens the shared prefix to 19; row 3's to 29 (<= 19 anyway)
    assert groups == [([0, 1, 3], 19), ([2], 0)]
    assert plan_groups([r["input_ids"] for r in rows], [r["labels"] for r in rows],
                       min_shared=20) == [([0, 3], 29), ([1], 0), ([2], 0)]
    batch = SharedPrefixCollator(pad_token_id=0, min_shared=16)(rows)
    g0, g1 = batch["groups"]
    assert g0["prefix_ids"].tolist() == [a[:19]]
    assert g0["input_ids"].shape == (3, 14) and g0["attention_mask"].sum(1).tolist() == [14, 14, 12]
    assert g0["labels"][0].tolist() == [IGNORE] * 12 + [2, 3]
    assert g0["labels"][2].tolist() == [IGNORE] * 11 + [8, IGNORE, IGNORE]
    assert g0["input_ids"][2, 12:].tolist() == [0, 0]
    assert g1["prefix_ids"].shape == (1, 0) and g1["input_ids"].tolist() == [[7] * 33]
    assert int(batch["num_tokens"]) == 33 + 33 + 33 + 31
    assert (batch["labels"] != IGNORE).sum() == 2 + 13 + 1 + 1


def test_row_order_batches_one_harness_and_is_deterministic() -> None:
    keys = ["a"] * 9 + ["b"] * 6 + ["c"] * 3
    order = grouped_order(keys, 4, seed=0)
    assert sorted(order) == list(range(len(keys)))
    assert order == grouped_order(keys, 4, seed=0) and order != grouped_order(keys, 4, seed=1)
    batches = [order[i:i + 4] for i in range(0, len(order), 4)]
    pure = [b for b in batches if len(b) == 4 and len({keys[i] for i in b}) == 1]
    assert len(pure) == 9 // 4 + 6 // 4  # every full chunk of a harness is one batch
    assert len(batches[-1]) == 18 % 4  # the one partial chunk comes last


def test_sft_end_to_end_with_share_prefix(tmp_path: Path) -> None:
    base = save_tiny_checkpoint(tmp_path / "base")
    data = make_dataset(tmp_path / "data")
    config = load_config("sft", overrides=tiny_sft_overrides(
        tmp_path, base, data, max_steps=2, save_steps=2, share_prefix=True,
        share_prefix_min_tokens=8))
    assert config.share_prefix
    seen: list[dict[str, Any]] = []
    real = SharedPrefixCollator.__call__

    def spy(self: SharedPrefixCollator, examples: list[dict[str, Any]]) -> dict[str, Any]:
        out = real(self, examples)
        seen.append(out)
        return out

    SharedPrefixCollator.__call__ = spy  # type: ignore[method-assign]
    try:
        final = sft.train(config)
    finally:
        SharedPrefixCollator.__call__ = real  # type: ignore[method-assign]
    assert (final / META_FILE).is_file() and (tmp_path / "sft" / "checkpoint-2").is_dir()
    meta = read_meta(final)
    assert meta is not None and meta["steps"] == 2
    assert all(loss > 0 for _, loss in meta["metrics"]["loss_history"])
    # the rows of one harness were batched together and shared their prefix
    assert seen and all(len(b["groups"]) == 1 and b["groups"][0]["prefix_ids"].shape[1] > 8
                        for b in seen)


def test_share_prefix_refuses_packing(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="share_prefix"):
        load_config("sft", overrides={"output_dir": str(tmp_path), "share_prefix": True,
                                      "packing": True})


def test_head_on_trained_only_equals_trls_loss_and_gradients(tmp_path: Path) -> None:
    """The default SFT loss (LM head at trained positions only) on a padded TRL batch: the
    same loss and gradients as TRL's own full-logits loss, and it is the path SFT takes."""
    from hatkit.train.checkpoint import resolve_model
    from hatkit.train.runtime import load_causal_lm

    base = save_tiny_checkpoint(tmp_path / "base")
    data = make_dataset(tmp_path / "data")
    # fp32 both (cpu_bf16 would autocast the fast path only: TRL's is unwrapped here)
    config = load_config("sft", overrides=tiny_sft_overrides(tmp_path, base, data, cpu_bf16=False))
    assert config.head_on_trained_only and not config.bf16
    model, tok = load_causal_lm(resolve_model(str(base)))
    model.train()
    trainer = sft.build_trainer(config, model, tok, sft.load_rows(config))
    assert type(trainer).__name__ == "SharedPrefixSFTTrainer"
    batch = next(iter(trainer.get_train_dataloader()))
    # make the second row 20 tokens shorter, padded on the right as the collator pads
    batch["input_ids"][1, -20:] = tok.pad_token_id
    batch["attention_mask"][1, -20:] = 0
    batch["labels"][1, -20:] = IGNORE
    n = int((batch["labels"][:, 1:] != IGNORE).sum())
    assert 0 < n < int(batch["attention_mask"].sum())  # some positions untrained
    fast = trainer.compute_loss(model, dict(batch))
    g_fast = _grads(model, fast)
    plain_config = load_config("sft", overrides=tiny_sft_overrides(
        tmp_path, base, data, head_on_trained_only=False, cpu_bf16=False))
    plain = sft.build_trainer(plain_config, model, tok, sft.load_rows(plain_config))
    assert type(plain).__name__ == "SFTTrainer"
    full = plain.compute_loss(model, dict(batch))
    g_full = _grads(model, full)
    assert torch.allclose(fast, full, rtol=1e-5, atol=1e-6), (fast, full)
    for k in g_full:
        assert torch.allclose(g_fast[k], g_full[k], rtol=1e-4, atol=1e-6), k
    # the metrics TRL logs are kept: token accuracy and the token count
    assert trainer._metrics["train"]["mean_token_accuracy"]
    assert trainer._metrics["train"]["num_tokens"] == [int(batch["attention_mask"].sum())]

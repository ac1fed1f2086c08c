"""Shared-prefix SFT: one forward pass of a system prompt for all rows of a batch that start
with it, with exactly the loss and gradients of the plain forward.

An SFT row of `hatkit data build` is ~1,450-1,800 tokens, of which the first ~800-1,000 are
the rendered harness (identical for every row of one harness) and only ~220, all after it,
are trained. With `share_prefix` on, SFT:

1. orders the rows so that a batch holds rows of one harness (`grouped_order`,
   `HarnessGroupedSampler`: deterministic for the seed, reshuffled per epoch);
2. collates each batch into groups of rows with a long common prefix (`SharedPrefixCollator`):
   per group the prefix ids [1, P] once, and the suffixes [b, S] right-padded with their
   attention mask and labels. P never reaches a trained token: P <= f - 1 for the first
   trained index f of every row, so the hidden state that predicts a trained token is always
   in the suffix;
3. computes the loss (`shared_prefix_loss`): the prefix runs once into a DynamicCache, which is
   repeated to the group's b rows (differentiably: the gradients of the b rows flow back into
   the one prefix pass, summed), the suffixes run on top of it at positions P.., and the LM
   head is applied only at the positions whose next token is trained. Cross-entropy summed over
   groups / trained tokens of the batch (or `num_items_in_batch` under gradient accumulation).

Exact up to float rounding (tests/train/test_shared_prefix.py compares every gradient with the
plain path). Limits: a model whose logits are `lm_head(last hidden state)` (Llama, Qwen, ...;
not logit soft-capping or scaling), one process (no DDP), no activation checkpointing (it
turns the cache off), no packing/padding-free. Dropout (LoRA's) is drawn once for the shared
prefix instead of once per row: the same distribution, a different draw.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Iterator, Sequence
from typing import Any

import torch
from torch.utils.data import Sampler

from ..models.decoding import common_prefix_len

IGNORE = -100
MIN_SHARED = 128  # a shorter common prefix is not worth a separate forward pass


def prefix_limit(labels: Sequence[int]) -> int:
    """The longest prefix a row can share: f - 1 for its first trained index f >= 1 (the
    hidden state at f - 1 predicts token f, so it must be in the suffix); len - 1 when nothing
    is trained (a suffix is never empty)."""
    for i in range(1, len(labels)):
        if labels[i] != IGNORE:
            return i - 1
    return max(0, len(labels) - 1)


def plan_groups(ids: Sequence[Sequence[int]], labels: Sequence[Sequence[int]],
                min_shared: int = MIN_SHARED) -> list[tuple[list[int], int]]:
    """Split rows into (row indices, shared prefix length P) groups, greedily in row order: a
    row joins the group where the shared prefix stays longest and >= `min_shared`. A group of
    one row gets P = 0 (a plain forward)."""
    groups: list[tuple[list[int], int]] = []  # (members, P); the first member is the reference
    for i, (row, lab) in enumerate(zip(ids, labels, strict=True)):
        limit = prefix_limit(lab)
        best, best_p = -1, -1
        for g, (members, p) in enumerate(groups):
            ref = members[0]
            cand = min(p, limit, common_prefix_len(ids[ref], row))
            if cand >= min_shared and cand > best_p:
                best, best_p = g, cand
        if best >= 0:
            groups[best][0].append(i)
            groups[best] = (groups[best][0], best_p)
        else:
            groups.append(([i], limit))
    return [(members, p if len(members) > 1 else 0) for members, p in groups]


class SharedPrefixCollator:
    """Collates TRL's prepared rows (`input_ids`, `labels`) into prefix groups (see module).

    The batch: `groups`, a list of {prefix_ids [1, P], input_ids [b, S], attention_mask [b, S],
    labels [b, S]}; `labels`, the rows' full labels [B, L] right-padded with -100 (the Trainer
    counts `num_items_in_batch` from it); `num_tokens`, the rows' tokens (prefix counted once
    per row, like a plain batch)."""

    def __init__(self, pad_token_id: int, min_shared: int = MIN_SHARED) -> None:
        self.pad_token_id = pad_token_id
        self.min_shared = min_shared

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        ids = [list(e["input_ids"]) for e in examples]
        labels = [list(e.get("labels", e["input_ids"])) for e in examples]
        groups = []
        for members, p in plan_groups(ids, labels, self.min_shared):
            suffixes = [ids[m][p:] for m in members]
            width = max(len(s) for s in suffixes)
            sfx = torch.full((len(members), width), self.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(members), width), dtype=torch.long)
            lab = torch.full((len(members), width), IGNORE, dtype=torch.long)
            for j, m in enumerate(members):
                n = len(ids[m]) - p
                sfx[j, :n] = torch.tensor(ids[m][p:])
                mask[j, :n] = 1
                lab[j, :n] = torch.tensor(labels[m][p:])
            groups.append({"prefix_ids": torch.tensor([ids[members[0]][:p]], dtype=torch.long),
                           "input_ids": sfx, "attention_mask": mask, "labels": lab})
        width = max(len(r) for r in ids)
        full = torch.full((len(ids), width), IGNORE, dtype=torch.long)
        for i, lab_row in enumerate(labels):
            full[i, :len(lab_row)] = torch.tensor(lab_row)
        return {"groups": groups, "labels": full,
                "num_tokens": torch.tensor(sum(len(r) for r in ids))}


def _causal_lm(model: Any) -> tuple[Any, Any, Any]:
    """(decoder, lm_head, config) of a causal LM, also through a PEFT wrapper (LoRA layers are
    injected in place, so the inner modules run with them)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    config = base.config
    if getattr(config, "final_logit_softcapping", None) or getattr(config, "logit_scale", None):
        raise ValueError("share_prefix needs logits = lm_head(hidden); this model scales them")
    return base.get_decoder(), base.get_output_embeddings(), config


def shared_prefix_loss_sums(model: Any, groups: list[dict[str, torch.Tensor]]
                            ) -> dict[str, torch.Tensor]:
    """Summed cross-entropy over the trained tokens of `groups` (differentiable), and (detached)
    the number of trained tokens, of top-1 hits and the summed entropy."""
    from transformers import DynamicCache

    decoder, head, config = _causal_lm(model)
    loss = torch.zeros((), device=groups[0]["input_ids"].device)
    n = correct = entropy = torch.zeros((), device=loss.device)
    for g in groups:
        ids, mask, labels, prefix = g["input_ids"], g["attention_mask"], g["labels"], g["prefix_ids"]
        b, s = ids.shape
        p = prefix.shape[1]
        target = labels[:, 1:]
        keep = target != IGNORE
        if not bool(keep.any()):
            continue
        if p:
            cache = DynamicCache(config=config)
            decoder(input_ids=prefix, cache=cache, use_cache=True)  # `cache`: transformers >= 5.24
            cache.batch_repeat_interleave(b)  # repeat_interleave: gradients of the b rows add up
            attn = torch.cat([torch.ones((b, p), dtype=mask.dtype, device=mask.device), mask], 1)
            pos = (p + torch.arange(s, device=ids.device)).unsqueeze(0).expand(b, s)
            hidden = decoder(input_ids=ids, attention_mask=attn, cache=cache,
                             use_cache=True, position_ids=pos).last_hidden_state
        else:
            hidden = decoder(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
        logits = head(hidden[:, :-1][keep]).float()
        gold = target[keep]
        loss = loss + torch.nn.functional.cross_entropy(logits, gold, reduction="sum")
        with torch.no_grad():
            logp = torch.log_softmax(logits, -1)
            entropy = entropy + -(logp.exp() * logp).sum()
            correct = correct + (logits.argmax(-1) == gold).sum()
            n = n + keep.sum()
    return {"loss_sum": loss, "n_trained": n, "n_correct": correct, "entropy_sum": entropy}


def shared_prefix_loss(model: Any, batch: dict[str, Any],
                       num_items_in_batch: Any = None) -> torch.Tensor:
    """Mean cross-entropy per trained token of a `SharedPrefixCollator` batch, divided by
    `num_items_in_batch` when given (gradient accumulation), else by the batch's own count."""
    sums = shared_prefix_loss_sums(model, batch["groups"])
    denom = sums["n_trained"] if num_items_in_batch is None else num_items_in_batch
    return sums["loss_sum"] / torch.as_tensor(denom, device=sums["loss_sum"].device).clamp(min=1)


def row_key(row: dict[str, Any], n_ids: int = 64) -> Hashable:
    """What batches rows together: their harness hash, else their first `n_ids` token ids."""
    if row.get("harness_hash") is not None:
        return str(row["harness_hash"])
    return tuple(row["input_ids"][:n_ids])


def grouped_order(keys: Sequence[Hashable], batch_size: int, seed: int) -> list[int]:
    """A permutation of the rows in which every chunk of `batch_size` holds rows of one key,
    but for chunks pooled from the groups' leftovers (and a last partial one, kept last so that
    chunk and batch boundaries agree). Rows are shuffled within their key, chunks among
    themselves; the same seed gives the same order."""
    rng = random.Random(seed)
    by_key: dict[Hashable, list[int]] = {}
    for i, k in enumerate(keys):
        by_key.setdefault(k, []).append(i)
    chunks: list[list[int]] = []
    leftovers: list[int] = []
    for members in by_key.values():
        rng.shuffle(members)
        full = len(members) - len(members) % batch_size
        chunks += [members[i:i + batch_size] for i in range(0, full, batch_size)]
        leftovers += members[full:]
    pooled = [leftovers[i:i + batch_size] for i in range(0, len(leftovers), batch_size)]
    last = pooled.pop() if pooled and len(pooled[-1]) < batch_size else []
    chunks += pooled
    rng.shuffle(chunks)
    return [i for chunk in chunks for i in chunk] + last


class HarnessGroupedSampler(Sampler[int]):
    """Yields `grouped_order(keys, batch_size, seed + epoch)` (the Trainer calls set_epoch)."""

    def __init__(self, keys: Sequence[Hashable], batch_size: int, seed: int) -> None:
        self.keys, self.batch_size, self.seed, self.epoch = list(keys), batch_size, seed, 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch

    def __iter__(self) -> Iterator[int]:
        return iter(grouped_order(self.keys, self.batch_size, self.seed + self.epoch))

    def __len__(self) -> int:
        return len(self.keys)


def dataset_keys(dataset: Any) -> list[Hashable]:
    """`row_key` of every row of a datasets.Dataset, reading only the columns it needs."""
    if "harness_hash" in dataset.column_names:
        hashes = dataset["harness_hash"]
        if all(h is not None for h in hashes):
            return [str(h) for h in hashes]
    return [row_key({"input_ids": r}) for r in dataset["input_ids"]]


def plain_batch_groups(inputs: dict[str, Any]) -> dict[str, Any]:
    """A TRL-collated batch (input_ids, attention_mask, labels; right-padded) as one group
    with no shared prefix, so that `shared_prefix_loss_sums` applies the LM head only at the
    positions whose next token is trained: the loss and gradients of the full-logits path
    without its [rows, length, vocabulary] logits (on a 49k vocabulary and ~1,500-token rows
    of which ~15% are trained, most of the head's work and memory)."""
    ids = inputs["input_ids"]
    mask = inputs.get("attention_mask")
    mask = torch.ones_like(ids) if mask is None else mask
    group = {"input_ids": ids, "attention_mask": mask, "labels": inputs["labels"],
             "prefix_ids": ids[:, :0]}
    return {"groups": [group], "labels": inputs["labels"], "num_tokens": mask.sum()}


def make_trainer_class(group_by_harness: bool = True) -> type:
    """TRL's SFTTrainer whose loss applies the LM head at trained positions only; with
    `group_by_harness`, also the shared-prefix sampler (batches of one harness) for the
    SharedPrefixCollator's groups. Imported lazily, as TRL is."""
    from trl.trainer.sft_trainer import SFTTrainer

    class SharedPrefixSFTTrainer(SFTTrainer):  # type: ignore[misc]
        """SFTTrainer whose loss runs the LM head only where a token is trained (and, with
        group_by_harness, whose batches hold rows of one harness and share their prefix)."""

        def _get_train_sampler(self, train_dataset: Any = None) -> Any:
            if not group_by_harness:
                return super()._get_train_sampler(train_dataset)
            ds = self.train_dataset if train_dataset is None else train_dataset
            return HarnessGroupedSampler(dataset_keys(ds), self.args.per_device_train_batch_size,
                                         self.args.seed)

        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:
            if "groups" not in inputs and (return_outputs or "labels" not in inputs
                                           or "position_ids" in inputs):
                return super().compute_loss(  # type: ignore[no-untyped-call]
                    model, inputs, return_outputs, num_items_in_batch)
            if "groups" not in inputs:
                inputs = plain_batch_groups(inputs)
            if return_outputs:
                raise NotImplementedError("share_prefix computes no full logits")
            if self.accelerator.num_processes > 1:
                raise NotImplementedError("share_prefix runs on one process (no DDP)")
            mode = "train" if model.training else "eval"
            with self.accelerator.autocast():  # the decoder is called past the wrapped forward
                sums = shared_prefix_loss_sums(model, inputs["groups"])
            n = sums["n_trained"]
            denom = n if num_items_in_batch is None else num_items_in_batch
            loss = sums["loss_sum"] / torch.as_tensor(denom, device=n.device).clamp(min=1)
            valid = max(int(n), 1)
            self._metrics[mode]["entropy"].append(float(sums["entropy_sum"]) / valid)
            self._metrics[mode]["mean_token_accuracy"].append(float(sums["n_correct"]) / valid)
            if mode == "train":
                self._total_train_tokens += int(inputs["num_tokens"])
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
            return loss

    return SharedPrefixSFTTrainer

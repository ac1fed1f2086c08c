"""The lean decode step (models/lean_step.py): the same logits and cache bit for bit as the
transformers forward, in fp32, bf16 and int8, and decode_batch's rows unchanged by it; models of
another shape keep the transformers forward."""

from __future__ import annotations

import copy

import pytest
import torch
from transformers import StaticCache

from hatkit.models import decoding
from hatkit.models.lean_step import decode_step, supports
from hatkit.models.precision import apply_precision
from tiny import tiny_llama

PREFIX, ROWS, STEPS = 11, 3, 4


def _cache(model: torch.nn.Module, prefix: torch.Tensor) -> StaticCache:
    cache = StaticCache(config=model.config, max_cache_len=PREFIX + ROWS * STEPS)
    model(input_ids=prefix, cache=cache, use_cache=True)
    return cache


def _bias(model: torch.nn.Module, step: int) -> torch.Tensor:
    """Every row sees the prefix and its own earlier decode tokens (slots packed row after row)."""
    kv = PREFIX + ROWS * (step + 1)
    allowed = torch.zeros((ROWS, kv), dtype=torch.bool)
    allowed[:, :PREFIX] = True
    for r in range(ROWS):
        allowed[r, PREFIX + r::ROWS] = True
    groups = model.config.num_attention_heads // model.config.num_key_value_heads
    return torch.zeros(allowed.shape).masked_fill_(~allowed, float("-inf")).repeat(groups, 1)[None, None]


@pytest.mark.parametrize("precision", ["fp32", "bf16", "int8"])
def test_a_lean_step_equals_the_transformers_forward_bit_for_bit(precision: str) -> None:
    model = tiny_llama(64, seed=3)
    prefix = torch.randint(3, 64, (1, PREFIX))
    apply_precision(model, precision, calibration=prefix)
    assert supports(model)
    with torch.inference_mode():
        ours, theirs = _cache(model, prefix), _cache(model, prefix)
        ids = torch.randint(3, 64, (1, ROWS))
        for step in range(STEPS):
            pos = torch.full((1, ROWS), PREFIX + step)
            bias = _bias(model, step).to(model.dtype)
            lean = decode_step(model, ours, ids, pos, bias)
            with decoding._packed_attention(model):
                ref = model(input_ids=ids, attention_mask=bias, position_ids=pos, cache=theirs,
                            use_cache=True).logits
            assert torch.equal(lean, ref), f"step {step}: max |diff| {(lean - ref).abs().max()}"
            ids = ref[0].argmax(-1)[None]
        for a, b in zip(ours.layers, theirs.layers, strict=True):
            assert torch.equal(a.keys, b.keys) and torch.equal(a.values, b.values)
            assert int(a.cumulative_length) == int(b.cumulative_length) == PREFIX + ROWS * STEPS


def test_decode_batch_rows_are_the_same_with_and_without_the_lean_step(
        monkeypatch: pytest.MonkeyPatch) -> None:
    model = tiny_llama(64, seed=5)
    prefix = torch.randint(3, 64, (1, PREFIX))
    suffixes = [[5, 6, 7], [9], [11, 12, 13, 14, 15]]
    with torch.inference_mode():
        out = model(input_ids=prefix, use_cache=True)  # a prefix cache as LocalModel keeps one
        cache = out.get("cache") or out.get("past_key_values")

    def run() -> list[tuple[list[int], list[float] | None, str]]:
        rows, _ = decoding.decode_batch(model, cache, PREFIX, suffixes, eos_id=2, max_new_tokens=12,
                                        logprobs=True)
        return [(r.token_ids, r.logprobs, r.finish_reason) for r in rows]

    lean = run()
    monkeypatch.setattr(decoding, "lean_supports", lambda _m: False)
    assert run() == lean
    assert sum(len(ids) for ids, _, _ in lean) > len(suffixes)  # decode steps ran, not prefill alone


def test_other_shapes_and_training_keep_the_transformers_forward() -> None:
    from transformers import Qwen3Config, Qwen3ForCausalLM

    llama = tiny_llama(64)
    assert supports(llama)
    assert not supports(copy.deepcopy(llama).train())
    qwen = Qwen3ForCausalLM(Qwen3Config(vocab_size=64, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=1, num_attention_heads=4,
                                        num_key_value_heads=2, head_dim=8)).eval()
    assert not supports(qwen)  # its attention normalises queries and keys (q_norm, k_norm)
    gelu = tiny_llama(64)
    gelu.config.hidden_act = "gelu"
    assert not supports(gelu)


def test_a_verify_pass_equals_forward_hidden_and_speculation_keeps_its_tokens(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A speculative verify pass (n tokens of one row, causal among themselves) through the
    lean step: the logits and hidden state the MTP heads read equal `forward_hidden`'s, and
    prompt-lookup speculation decodes the same tokens with and without it."""
    from hatkit.models.lean_step import mask_bias
    from hatkit.models.mtp import forward_hidden
    from hatkit.models.speculative import branch_allowed

    model = tiny_llama(64, seed=7)
    prefix = torch.randint(3, 64, (1, PREFIX))
    with torch.inference_mode():
        ours, theirs = _cache(model, prefix), _cache(model, prefix)
        ids = torch.randint(3, 64, (1, 4))
        pos = (PREFIX + torch.arange(4))[None]
        logits, hidden = decode_step(model, ours, ids, pos, mask_bias(model, branch_allowed(PREFIX, 3, 0)),
                                     hidden=True)
        ref_logits, ref_hidden = forward_hidden(model, input_ids=ids, position_ids=pos, cache=theirs,
                                                attention_mask=torch.ones((1, PREFIX + 4), dtype=torch.long),
                                                use_cache=True)
    assert torch.allclose(logits, ref_logits, atol=1e-5) and torch.allclose(hidden, ref_hidden, atol=1e-5)
    assert torch.equal(logits.argmax(-1), ref_logits.argmax(-1))

    suffix = [5, 6, 7, 5, 6, 7, 5, 6]  # repeats, so prompt lookup drafts
    context = prefix[0].tolist() + suffix
    with torch.inference_mode():
        out = model(input_ids=prefix, use_cache=True)
    cache = out.get("cache") or out.get("past_key_values")

    def run() -> list[int]:
        row, _ = decoding.decode_one_speculative(model, cache, PREFIX, suffix, context=context,
                                                 eos_id=-1, max_new_tokens=16)
        return row.token_ids

    lean = run()
    monkeypatch.setattr(decoding, "lean_supports", lambda _m: False)
    assert run() == lean and len(lean) == 16
    rows, _ = decoding.decode_batch(model, cache, PREFIX, [suffix], eos_id=-1, max_new_tokens=16)
    assert rows[0].token_ids == lean

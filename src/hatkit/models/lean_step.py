"""A decode step of a Llama-family model without transformers' per-call machinery.

Why: a decode step is 30 layers of a few small matrix products, and around them transformers
runs per-call work that costs as much as a product at this size: output-recording and
deprecation wrappers, kwargs plumbing, the cache's update through `index_copy_` with a fresh
position tensor per layer, the attention interface lookup, and rotary embeddings applied to
queries and keys separately. Measured on the default model (830-token prefix, in one process,
alternating): a decode step alone 3-13% faster in fp32 and 9-18% in int8 (2 threads); whole
`decode_batch` calls of 48 tokens, prefill included (1 thread, another process on the other
core), int8 1.10-1.13x at batch 1 and 1.04-1.09x at batch 8, bf16 1.02-1.13x and 1.01-1.09x,
fp32 0.96-1.04x at batch 8 (fp32 at batch 1 spread 1.02-2.22x: noise).

The arithmetic is the model's own, op for op (the same modules for every Linear, so packed,
bf16 and int8 layers run unchanged; RMSNorm and rotary as transformers computes them), so the
logits are bit-identical to `model(...)`'s (tested). Models of another shape (`supports` is
False) keep the transformers forward.
"""

from __future__ import annotations

from typing import Any

_KINDS = frozenset({"llama"})
"""config.model_type values whose decoder layer is exactly the one below."""


def supports(model: Any) -> bool:
    """Whether `decode_step` computes what this model's forward computes: a Llama decoder (RMSNorm,
    rotary, grouped-query attention without softcap or sliding window, SiLU-gated MLP), in
    inference mode, with output recording not switched on."""
    c = getattr(model, "config", None)
    if c is None or getattr(c, "model_type", None) not in _KINDS or model.training:
        return False
    if getattr(c, "hidden_act", "silu") != "silu" or getattr(c, "pretraining_tp", 1) != 1:
        return False
    inner = getattr(model, "model", None)
    return all(hasattr(inner, n) for n in ("embed_tokens", "layers", "norm", "rotary_emb"))


def mask_bias(model: Any, allowed: Any) -> Any:
    """`allowed` [queries, kv] (a query may attend to a cache slot) as the additive mask
    `decode_step` and `_packed_sdpa` take: 0 or -inf in the model's dtype, its rows repeated
    for each query head that shares a K/V head, shaped (1, 1, groups * queries, kv)."""
    import torch

    c = model.config
    groups = c.num_attention_heads // (getattr(c, "num_key_value_heads", None) or c.num_attention_heads)
    zeros = torch.zeros(allowed.shape, dtype=model.dtype, device=allowed.device)
    return zeros.masked_fill_(~allowed, float("-inf")).repeat(groups, 1)[None, None]


def decode_step(model: Any, cache: Any, input_ids: Any, position_ids: Any, bias: Any, *,
                hidden: bool = False, slots: Any = None) -> Any:
    """Logits [1, n, vocab] of `input_ids` [1, n] at `position_ids` [1, n], writing their keys
    and values into the StaticCache `cache` at slots kv - n.. (kv = `bias`'s width); `bias` is
    decode_batch's additive mask (1, 1, groups * n, kv) over the first kv slots, the query
    heads sharing a K/V head stacked along the query axis (as `_packed_sdpa`). With `hidden`,
    (logits, last hidden state) as `mtp.forward_hidden` returns them. `slots` [n] (a long
    tensor) writes the keys and values to those cache slots instead (compiled_step's padded
    rows write to a scratch slot)."""
    import torch
    from torch.nn.functional import scaled_dot_product_attention as sdpa
    from torch.nn.functional import silu

    inner = model.model
    c = model.config
    heads, kv_heads = c.num_attention_heads, c.num_key_value_heads
    dim = getattr(c, "head_dim", None) or c.hidden_size // heads
    n = input_ids.shape[-1]
    kv = bias.shape[-1]
    start = kv - n
    h = inner.embed_tokens(input_ids)
    cos, sin = inner.rotary_emb(h, position_ids)
    cos, sin = cos[:, None], sin[:, None]
    half = dim // 2
    for layer, slot in zip(inner.layers, cache.layers, strict=True):
        attn = layer.self_attn
        x = _rms(h, layer.input_layernorm)
        q = attn.q_proj(x).view(1, n, heads, dim).transpose(1, 2)
        k = attn.k_proj(x).view(1, n, kv_heads, dim).transpose(1, 2)
        v = attn.v_proj(x).view(1, n, kv_heads, dim).transpose(1, 2)
        q = q * cos + torch.cat((-q[..., half:], q[..., :half]), -1) * sin
        k = k * cos + torch.cat((-k[..., half:], k[..., :half]), -1) * sin
        if slots is None:
            slot.keys[:, :, start:kv] = k
            slot.values[:, :, start:kv] = v
        else:
            slot.keys.index_copy_(2, slots, k)
            slot.values.index_copy_(2, slots, v)
        slot.cumulative_length.fill_(kv)
        out = sdpa(q.reshape(1, kv_heads, heads // kv_heads * n, dim), slot.keys[:, :, :kv],
                   slot.values[:, :, :kv], attn_mask=bias, scale=attn.scaling)
        h = h + attn.o_proj(out.reshape(1, heads, n, dim).transpose(1, 2).reshape(1, n, heads * dim))
        x = _rms(h, layer.post_attention_layernorm)
        mlp = layer.mlp
        h = h + mlp.down_proj(silu(mlp.gate_proj(x)) * mlp.up_proj(x))
    last = _rms(h, inner.norm)
    logits = model.lm_head(last)
    return (logits, last) if hidden else logits


def _rms(h: Any, norm: Any) -> Any:
    """LlamaRMSNorm's forward, op for op (in fp32, then back to the input's dtype)."""
    import torch

    x = h.to(torch.float32)
    x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + norm.variance_epsilon)
    return norm.weight * x.to(h.dtype)

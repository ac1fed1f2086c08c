"""A small batched decoder over a shared, cached prompt prefix.

Why not `model.generate`: it grows the KV cache by concatenation at every step (a full copy of
a 1,500-token cache per token, per row, which dominates on a CPU) and keeps decoding rows that
have finished until the longest one ends. Here the cache is preallocated (a transformers
StaticCache) with the prefix copied in once, and a row leaves the batch the moment it ends, so
a batch costs about the sum of its replies rather than the longest times the batch size.
Greedy outputs equal `generate`'s (tested).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .speculative import SpecStats, prompt_lookup_draft

OnToken = Callable[[int, int], None]
"""Streaming callback: (row, token id), called as each token is decided."""


@dataclass
class RowResult:
    token_ids: list[int]
    logprobs: list[float] | None
    finish_reason: str
    """stop (end-of-turn token or stop string) or length."""


def decode_batch(model: Any, prefix_cache: Any, prefix_len: int, suffixes: Sequence[Sequence[int]], *,
                 eos_id: int, pad_id: int, max_new_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, logprobs: bool = False,
                 stopped: Callable[[int, list[int]], bool] | None = None,
                 generator: Any = None,
                 on_token: OnToken | None = None) -> tuple[list[RowResult], float]:
    """Decode every row after `prefix + suffix`; returns the rows and the time to first token.

    Rows are padded between the prefix and their suffix so the prefix keeps its positions.
    `stopped(row, ids)` says whether a row's text hit a stop string. `on_token(row, id)` is
    called for each token the moment it is chosen (streaming), before the row's stop checks.
    """
    import torch
    from transformers import StaticCache

    device = model.device
    b, width = len(suffixes), max(len(s) for s in suffixes)
    total = prefix_len + width + max_new_tokens
    cache: Any = StaticCache(config=model.config, max_cache_len=total)
    if prefix_len:
        for layer, cached in zip(cache.layers, prefix_cache.layers, strict=True):
            layer.update(cached.keys.expand(b, -1, -1, -1).contiguous(),
                         cached.values.expand(b, -1, -1, -1).contiguous())
    ids = torch.full((b, width), pad_id, dtype=torch.long, device=device)
    pos = torch.full((b, width), prefix_len, dtype=torch.long, device=device)
    attn = torch.zeros((b, total), dtype=torch.long, device=device)
    attn[:, :prefix_len] = 1
    for i, s in enumerate(suffixes):
        n = len(s)
        ids[i, width - n:] = torch.tensor(list(s), dtype=torch.long, device=device)
        pos[i, width - n:] = prefix_len + torch.arange(n, device=device)
        attn[i, prefix_len + width - n: prefix_len + width] = 1
    cur = prefix_len + width
    next_pos = torch.tensor([prefix_len + len(s) for s in suffixes], device=device)
    rows = list(range(b))
    out_ids: list[list[int]] = [[] for _ in range(b)]
    out_lp: list[list[float]] = [[] for _ in range(b)]
    reasons = ["length"] * b
    started = time.perf_counter()
    ttft = 0.0
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=attn[:, :cur], position_ids=pos,
                       cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1].float()
        for step in range(max_new_tokens):
            if step == 0:
                ttft = time.perf_counter() - started
            nxt, lp = _choose(logits, temperature, top_p, logprobs, generator)
            keep = []
            for j, r in enumerate(rows):
                tok = int(nxt[j])
                out_ids[r].append(tok)
                if on_token is not None:
                    on_token(r, tok)
                if lp is not None:
                    out_lp[r].append(float(lp[j]))
                if tok == eos_id or (stopped is not None and stopped(r, out_ids[r])):
                    reasons[r] = "stop"
                elif step < max_new_tokens - 1:
                    keep.append(j)
            if not keep:
                break
            if len(keep) < len(rows):
                kt = torch.tensor(keep, device=device)
                for layer in cache.layers:
                    layer.keys = layer.keys.index_select(0, kt)
                    layer.values = layer.values.index_select(0, kt)
                    layer.batch_size = len(keep)
                attn, nxt, next_pos = (attn.index_select(0, kt), nxt.index_select(0, kt),
                                       next_pos.index_select(0, kt))
                rows = [rows[j] for j in keep]
            attn[:, cur] = 1
            cur += 1
            logits = model(input_ids=nxt[:, None], attention_mask=attn[:, :cur],
                           position_ids=next_pos[:, None], cache=cache,
                           use_cache=True).logits[:, -1].float()
            next_pos = next_pos + 1
    results = [RowResult(out_ids[i], out_lp[i] if logprobs else None, reasons[i]) for i in range(b)]
    return results, ttft


def _choose(logits: Any, temperature: float, top_p: float, want_lp: bool,
            generator: Any) -> tuple[Any, Any]:
    """Greedy or nucleus sampling; log-probs are of the (temperature-scaled) policy."""
    import torch

    scaled = logits / temperature if temperature > 0 else logits
    logp = torch.log_softmax(scaled, -1)
    if temperature <= 0:
        chosen = logits.argmax(-1)
    else:
        probs = logp.exp()
        if top_p < 1.0:
            sorted_p, order = probs.sort(-1, descending=True)
            cut = sorted_p.cumsum(-1) - sorted_p > top_p
            sorted_p = sorted_p.masked_fill(cut, 0.0)
            probs = torch.zeros_like(probs).scatter(-1, order, sorted_p)
        chosen = torch.multinomial(probs / probs.sum(-1, keepdim=True), 1, generator=generator)[:, 0]
    lp = logp.gather(-1, chosen[:, None])[:, 0] if want_lp else None
    return chosen, lp


def decode_one_speculative(model: Any, prefix_cache: Any, prefix_len: int, suffix: Sequence[int], *,
                           context: Sequence[int], eos_id: int, max_new_tokens: int,
                           stopped: Callable[[int, list[int]], bool] | None = None,
                           num_draft: int = 8, max_ngram: int = 3, min_ngram: int = 1,
                           stats: SpecStats | None = None, adaptive: bool = True,
                           on_token: OnToken | None = None) -> tuple[RowResult, float]:
    """Greedy decoding of one row with prompt-lookup speculation; same tokens as `decode_batch`.

    `context` is the whole prompt (prefix + suffix) that drafts are looked up in. Each step
    feeds the pending token plus up to `num_draft` drafted tokens in one forward pass, keeps the
    drafts that equal the model's greedy choices, and rolls the cache back over the rest (a
    StaticCache layer's write offset is moved back; stale entries are overwritten next step).
    Stop checks run token by token, exactly as in `decode_batch`. With `adaptive`, the draft
    length grows by 2 after a fully accepted draft and shrinks by 1 after a rejection (as in
    transformers' assisted generation), so wrong drafts cost less verify width.
    """
    import torch
    from transformers import StaticCache

    device = model.device
    suffix = list(suffix)
    total = prefix_len + len(suffix) + max_new_tokens + num_draft + 1
    cache: Any = StaticCache(config=model.config, max_cache_len=total)
    if prefix_len:
        for layer, cached in zip(cache.layers, prefix_cache.layers, strict=True):
            layer.update(cached.keys[:1].contiguous(), cached.values[:1].contiguous())
    seq = list(context)
    out: list[int] = []
    reason = "length"
    st = stats if stats is not None else SpecStats()
    started = time.perf_counter()
    cur = prefix_len + len(suffix)
    k = num_draft
    with torch.inference_mode():
        ids = torch.tensor([suffix], dtype=torch.long, device=device)
        pos = (prefix_len + torch.arange(len(suffix), device=device))[None]
        attn = torch.ones((1, cur), dtype=torch.long, device=device)
        logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, cache=cache,
                       use_cache=True, logits_to_keep=1).logits[:, -1].float()
        pending = int(logits.argmax(-1)[0])
        ttft = time.perf_counter() - started
        done = False
        while True:
            # emit the pending token (the model's own greedy choice)
            out.append(pending)
            seq.append(pending)
            if on_token is not None:
                on_token(0, pending)
            if pending == eos_id or (stopped is not None and stopped(0, out)):
                reason, done = "stop", True
            if done or len(out) >= max_new_tokens:
                break
            room = max_new_tokens - len(out) - 1  # the verify pass yields one token beyond drafts
            draft = prompt_lookup_draft(seq, max_ngram=max_ngram, min_ngram=min_ngram,
                                        num_draft=min(k, room)) if room > 0 else []
            feed = [pending, *draft]
            n = len(feed)
            ids = torch.tensor([feed], dtype=torch.long, device=device)
            pos = (cur + torch.arange(n, device=device))[None]
            attn = torch.ones((1, cur + n), dtype=torch.long, device=device)
            logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, cache=cache,
                           use_cache=True).logits[0].float()
            greedy = logits.argmax(-1).tolist()
            accepted, k = st.verify(draft, greedy, cache, k=k, num_draft=num_draft, adaptive=adaptive)
            cur += 1 + accepted
            for tok in draft[:accepted]:
                out.append(tok)
                seq.append(tok)
                if on_token is not None:
                    on_token(0, tok)
                if tok == eos_id or (stopped is not None and stopped(0, out)):
                    reason, done = "stop", True
                    break
                if len(out) >= max_new_tokens:
                    done = True
                    break
            if done:
                break
            pending = int(greedy[accepted])
    st.tokens += len(out)
    return RowResult(out, None, reason), ttft

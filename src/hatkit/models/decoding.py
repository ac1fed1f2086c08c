"""A small batched decoder over a shared, cached prompt prefix.

Why not `model.generate`: it grows the KV cache by concatenation at every step (a full copy of
a 1,500-token cache per token, per row, which dominates on a CPU) and keeps decoding rows that
have finished until the longest one ends. Here the cache is preallocated (a transformers
StaticCache) and a row leaves the batch the moment it ends, so a batch costs about the sum of
its replies rather than the longest times the batch size. Greedy outputs equal `generate`'s
(tested).

The rows of a batch are packed into one sequence behind one copy of the shared prefix: each
step appends one token per live row, and a boolean mask lets each token see the prefix and its
own row only (positions are per row). A step therefore reads the prefix's KV cache once, not
once per row (at batch 8 the per-row copies of a 1,500-token prefix were more bytes than the
fp32 weights), rows need no padding, and a finished row costs nothing to drop. Attention runs
through `_packed_sdpa` (grouped-query heads folded into the query, so K/V are never repeated);
for a Llama-family model a decode step runs `lean_step.decode_step`, the same arithmetic without
transformers' per-call machinery (bit-identical logits, tested).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .lean_step import decode_step, mask_bias
from .lean_step import supports as lean_supports
from .speculative import SpecStats, branch_allowed, prompt_lookup_draft

OnToken = Callable[[int, int], None]
"""Streaming callback: (row, token id), called as each token is decided."""


@dataclass
class RowResult:
    token_ids: list[int]
    logprobs: list[float] | None
    finish_reason: str
    """stop (end-of-turn token or stop string) or length."""
    kv: RowKV | None = None
    """With decode_batch(keep_kv=True): the row's own keys and values, for a later call."""


def decode_batch(model: Any, prefix_cache: Any, prefix_len: int, suffixes: Sequence[Sequence[int]], *,
                 eos_id: int, max_new_tokens: int, temperature: float = 0.0,
                 top_p: float = 1.0, logprobs: bool = False,
                 stopped: Callable[[int, list[int]], bool] | None = None,
                 generator: Any = None,
                 on_token: OnToken | None = None,
                 known: Sequence[RowKV | None] | None = None,
                 keep_kv: bool = False, compiled: Any = None) -> tuple[list[RowResult], float]:
    """Decode every row after `prefix + suffix`; returns the rows and the time to first token.

    The rows are packed into one sequence (see module): each token attends to the prefix and
    to its own row's earlier tokens and has its row's positions, so a row decodes as it would
    alone. `stopped(row, ids)` says whether a row's text hit a stop string. `on_token(row, id)`
    is called for each token the moment it is chosen (streaming), before the row's stop checks.

    Prefill runs row by row, each row's queries over the prefix and its own slots only: one
    packed prefill computed every token against every row's tokens (masked), so its attention
    grew with the square of the batch's total width (16 rows of 700 tokens: ~8x the work).
    `known[r]` (a RowKV from an earlier call's `keep_kv`) holds the keys and values of the
    first tokens of row r's suffix, which are then copied instead of recomputed (a turn of an
    agent episode repeats the whole conversation so far). With `keep_kv`, each result's `kv`
    is its row's own keys and values (suffix plus generated tokens but the last).

    `compiled` (a compiled_step.CompiledStep of `model`) runs the decode steps; prefill stays
    eager (its shapes change with every prompt).
    """
    import torch

    device = model.device
    b = len(suffixes)
    lens = [len(s) for s in suffixes]
    width = sum(lens)
    total = prefix_len + width + b * max_new_tokens
    cache = _step_cache(model, total, compiled)
    if prefix_len:
        for layer, cached in zip(cache.layers, prefix_cache.layers, strict=True):
            layer.update(cached.keys, cached.values)
    # allowed[r, j]: row r's tokens may attend to cache slot j
    allowed = torch.zeros((b, total), dtype=torch.bool, device=device)
    allowed[:, :prefix_len] = True
    starts = [prefix_len + sum(lens[:r]) for r in range(b)]  # row r's own slots start here
    for r in range(b):
        allowed[r, starts[r]:starts[r] + lens[r]] = True
    next_pos = prefix_len + torch.tensor(lens, device=device)
    cur = prefix_len + width
    known = list(known) if known is not None else [None] * b
    step_slots: list[list[int]] = [[] for _ in range(b)]  # each row's decode-step cache slots

    rows = list(range(b))
    out_ids: list[list[int]] = [[] for _ in range(b)]
    out_lp: list[list[float]] = [[] for _ in range(b)]
    reasons = ["length"] * b
    started = time.perf_counter()
    ttft = 0.0
    window = _Window(prefix_len)
    lean = lean_supports(model)
    with torch.inference_mode(), _packed_attention(model, window):
        firsts = []
        for r, suffix in enumerate(suffixes):
            firsts.append(_prefill_row(model, cache, window, starts[r], prefix_len, list(suffix),
                                       known[r]))
        window.start = None  # decode steps: every filled slot under the `allowed` mask
        logits = torch.cat(firsts, 0)
        for step in range(max_new_tokens):
            if step == 0:
                ttft = time.perf_counter() - started
            nxt, lp = _choose(logits, temperature, top_p, logprobs, generator)
            chosen = nxt.tolist()
            lps = lp.tolist() if lp is not None else None
            keep = []
            for j, r in enumerate(rows):
                tok = chosen[j]
                out_ids[r].append(tok)
                if on_token is not None:
                    on_token(r, tok)
                if lps is not None:
                    out_lp[r].append(lps[j])
                if tok == eos_id or (stopped is not None and stopped(r, out_ids[r])):
                    reasons[r] = "stop"
                elif step < max_new_tokens - 1:
                    keep.append(j)
            if not keep:
                break
            if len(keep) < len(rows):
                kt = torch.tensor(keep, device=device)
                nxt, next_pos = nxt.index_select(0, kt), next_pos.index_select(0, kt)
                rows = [rows[j] for j in keep]
            active = torch.tensor(rows, device=device)
            n = len(rows)
            slots = cur + torch.arange(n, device=device)
            allowed[active, slots] = True
            for j, r in enumerate(rows):
                step_slots[r].append(cur + j)
            cur += n
            if compiled is not None:
                logits = compiled(cache, nxt[None], next_pos[None], allowed[active, :cur], slots)
            else:
                mask = mask_bias(model, allowed[active, :cur])  # once per step, not per layer
                logits = decode_step(model, cache, nxt[None], next_pos[None], mask) if lean else model(
                    input_ids=nxt[None], attention_mask=mask, position_ids=next_pos[None], cache=cache,
                    use_cache=True).logits
            logits = logits[0].float()
            next_pos = next_pos + 1
    results = [RowResult(out_ids[i], out_lp[i] if logprobs else None, reasons[i]) for i in range(b)]
    if keep_kv:
        for i, res in enumerate(results):
            slots = torch.tensor([*range(starts[i], starts[i] + lens[i]), *step_slots[i]],
                                 dtype=torch.long, device=device)
            res.kv = RowKV([(layer.keys.index_select(2, slots), layer.values.index_select(2, slots))
                            for layer in cache.layers])
    return results, ttft


def _step_cache(model: Any, total: int, compiled: Any) -> Any:
    """A StaticCache of `total` slots, plus the scratch slot a compiled step's padded rows
    write to (compiled_step)."""
    from transformers import StaticCache

    return StaticCache(config=model.config, max_cache_len=total + (1 if compiled is not None else 0))


def common_prefix_len(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens `a` and `b` share (binary search over slice comparisons, which
    run in C: a conversation is thousands of tokens and the cache holds dozens of rows)."""
    ta, tb = tuple(a), tuple(b)
    lo, hi = 0, min(len(ta), len(tb))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ta[:mid] == tb[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass
class RowKV:
    """One row's own keys and values per layer ([1, kv_heads, n, head_dim] each), after the
    shared prefix; position i of them is the row's token at position prefix_len + i."""

    layers: list[tuple[Any, Any]]

    def __len__(self) -> int:
        return int(self.layers[0][0].shape[2]) if self.layers else 0

    def nbytes(self) -> int:
        return sum(int(k.nbytes) + int(v.nbytes) for k, v in self.layers)


@dataclass
class _Window:
    """Which cache slots a prefill call's queries see: the prefix, then `start`.. (their own
    row); `start` None means every filled slot (decode steps, under the additive mask)."""

    prefix: int
    start: int | None = None


def _prefill_row(model: Any, cache: Any, window: _Window, start: int, prefix_len: int,
                 suffix: list[int], known: RowKV | None) -> Any:
    """Fill row slots start.. with the row's suffix (copying `known`'s first tokens) and return
    the logits [1, vocab] of its last token."""
    import torch

    device = model.device
    n_known = min(len(known), len(suffix) - 1) if known is not None else 0
    if n_known:
        for layer, (k, v) in zip(cache.layers, known.layers, strict=True):  # type: ignore[union-attr]
            layer.update(k[:, :, :n_known], v[:, :, :n_known])
    rest = suffix[n_known:]
    m = len(rest)
    own = torch.ones((m, n_known + m), dtype=torch.bool, device=device).tril(n_known)
    allowed = torch.cat([torch.ones((m, prefix_len), dtype=torch.bool, device=device), own], 1)
    window.start = start
    pos = prefix_len + n_known + torch.arange(m, device=device)
    return model(input_ids=torch.tensor([rest], dtype=torch.long, device=device),
                 attention_mask=mask_bias(model, allowed), position_ids=pos[None], cache=cache,
                 use_cache=True, logits_to_keep=1).logits[0].float()


_ATTENTION = "hatkit_packed_sdpa"


def _packed_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any,
                 dropout: float = 0.0, scaling: float | None = None, *,
                 window: _Window | None = None, **kwargs: Any) -> tuple[Any, None]:
    """SDPA over the filled cache slots under decode_batch's additive mask (1, 1, groups * q, kv);
    the query heads sharing a K/V head are stacked along the query axis instead of repeating K/V.
    A prefill `window` narrows the slots to the prefix and one row's own (kv - prefix) slots."""
    import torch

    if kwargs.get("sliding_window") or kwargs.get("softcap"):
        raise NotImplementedError("packed decoding supports full attention without softcap only")
    kv = attention_mask.shape[-1]
    if window is not None and window.start is not None:
        p, s, n = window.prefix, window.start, kv - window.prefix
        key = torch.cat([key[:, :, :p], key[:, :, s:s + n]], 2)
        value = torch.cat([value[:, :, :p], value[:, :, s:s + n]], 2)
    else:
        key, value = key[:, :, :kv], value[:, :, :kv]
    batch, heads, q, dim = query.shape
    groups = heads // key.shape[1]
    out = torch.nn.functional.scaled_dot_product_attention(
        query.reshape(batch, key.shape[1], groups * q, dim), key, value,
        attn_mask=attention_mask, scale=scaling)
    return out.reshape(batch, heads, q, -1).transpose(1, 2).contiguous(), None


@contextmanager
def _packed_attention(model: Any, window: _Window | None = None) -> Iterator[None]:
    """Route the model's attention through `_packed_sdpa` (seeing `window`) for one call
    (LocalModel is never called from two threads at once)."""
    from functools import partial

    from transformers import AttentionInterface

    AttentionInterface.register(_ATTENTION, partial(_packed_sdpa, window=window))
    before = model.config._attn_implementation
    model.config._attn_implementation = _ATTENTION
    try:
        yield
    finally:
        model.config._attn_implementation = before


def _choose(logits: Any, temperature: float, top_p: float, want_lp: bool,
            generator: Any) -> tuple[Any, Any]:
    """Greedy or nucleus sampling; log-probs are of the (temperature-scaled) policy.

    Per-step cost matters at batch 8 over a 49k vocabulary: greedy skips the softmax unless
    log-probs are wanted; sampling draws by inverse CDF (torch.multinomial cost ~8 ms a step);
    top_p < 1 looks for the nucleus among the 256 likeliest tokens when they hold more than
    top_p of the mass (a full sort cost ~40 ms), and sorts everything only otherwise."""
    import torch

    if temperature <= 0:
        chosen = logits.argmax(-1)
        if not want_lp:
            return chosen, None
        logp = torch.log_softmax(logits, -1)
    else:
        logp = torch.log_softmax(logits / temperature, -1)
        probs = logp.exp()
        if top_p < 1.0:
            top, order = probs.topk(min(probs.shape[-1], 256), -1)
            if not bool((top.sum(-1) > top_p).all()):
                top, order = probs.sort(-1, descending=True)
            top = top.masked_fill(top.cumsum(-1) - top > top_p, 0.0)
            chosen = order.gather(-1, _draw(top, generator)[:, None])[:, 0]
        else:
            chosen = _draw(probs, generator)
    lp = logp.gather(-1, chosen[:, None])[:, 0] if want_lp else None
    return chosen, lp


def _draw(weights: Any, generator: Any) -> Any:
    """One index per row with probability proportional to `weights` (>= 0), by inverse CDF."""
    import torch

    cum = weights.double().cumsum(-1)
    u = torch.rand((cum.shape[0], 1), generator=generator, dtype=cum.dtype, device=cum.device)
    return torch.searchsorted(cum, u * cum[:, -1:], right=True)[:, 0].clamp_max(cum.shape[-1] - 1)


def decode_one_speculative(model: Any, prefix_cache: Any, prefix_len: int, suffix: Sequence[int], *,
                           context: Sequence[int], eos_id: int, max_new_tokens: int,
                           stopped: Callable[[int, list[int]], bool] | None = None,
                           num_draft: int = 8, max_ngram: int = 3, min_ngram: int = 1,
                           stats: SpecStats | None = None, adaptive: bool = True,
                           on_token: OnToken | None = None, heads: Any = None,
                           lookup_branch: int = 0, draft_confidence: float = 0.0,
                           compiled: Any = None) -> tuple[RowResult, float]:
    """Greedy decoding of one row with prompt-lookup speculation, or with trained MTP `heads`
    (models.mtp) drafting from the hidden state of the target's last pass; same tokens as
    `decode_batch`.

    `context` is the whole prompt (prefix + suffix) that drafts are looked up in. Each step
    feeds the pending token plus up to `num_draft` drafted tokens in one forward pass, keeps the
    drafts that equal the model's greedy choices, and rolls the cache back over the rest (a
    StaticCache layer's write offset is moved back; stale entries are overwritten next step).
    Stop checks run token by token, exactly as in `decode_batch`. With `adaptive`, the draft
    length grows by 2 after a fully accepted draft and shrinks by 1 after a rejection (as in
    transformers' assisted generation), so wrong drafts cost less verify width.

    With `heads` and `lookup_branch` > 0 (Llama-family models, `lean_step`), each verify pass
    also checks up to that many tokens copied from the context by prompt lookup, as a second
    branch beside the heads' draft (the rows of each branch see only the pending token and
    their own branch), and keeps the branch the target confirms further: a reply copying a
    product name or price from a tool result is drafted by lookup, other text by the heads.
    The heads then draft up to their full number of tokens every pass (a verify pass of up to
    about 8 rows costs about the same on a CPU, so shrinking the draft saves nothing), cut where
    the heads' joint probability falls below `draft_confidence` (MTPHeads.propose).

    `compiled` (a compiled_step.CompiledStep of `model`) runs the verify passes of a
    Llama-family model (a pass of 1-8 rows pads to 8 rows at most).
    """
    import torch

    from .mtp import forward_hidden

    device = model.device
    suffix = list(suffix)
    widest = max(num_draft, (heads.meta.num_heads + lookup_branch) if heads is not None else 0)
    total = prefix_len + len(suffix) + max_new_tokens + widest + 1
    cache = _step_cache(model, total, compiled)
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
    lean = lean_supports(model)
    branching = heads is not None and lookup_branch > 0 and lean
    with torch.inference_mode():
        ids = torch.tensor([suffix], dtype=torch.long, device=device)
        pos = (prefix_len + torch.arange(len(suffix), device=device))[None]
        attn = torch.ones((1, cur), dtype=torch.long, device=device)
        if heads is None:
            logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, cache=cache,
                           use_cache=True, logits_to_keep=1).logits[:, -1].float()
        else:
            logits, hidden = forward_hidden(model, last=True, input_ids=ids, attention_mask=attn,
                                            position_ids=pos, cache=cache, use_cache=True)
            logits, state = logits[:, -1].float(), hidden[0, -1]
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
            branch: list[int] = []
            if heads is not None:
                draft = heads.propose(state, min(heads.meta.num_heads if branching else k, room,
                                                 heads.meta.num_heads), draft_confidence)
                if branching and room > 0:
                    branch = prompt_lookup_draft(seq, max_ngram=max_ngram, min_ngram=max(2, min_ngram),
                                                 num_draft=min(lookup_branch, room))
                    if branch == draft[:len(branch)]:
                        branch = []  # nothing the heads' draft does not already check
            else:
                draft = prompt_lookup_draft(seq, max_ngram=max_ngram, min_ngram=min_ngram,
                                            num_draft=min(k, room)) if room > 0 else []
            feed = [pending, *draft, *branch]
            n = len(feed)
            ids = torch.tensor([feed], dtype=torch.long, device=device)
            if lean:  # one branch (causal) or two side by side, each after the pending token
                pos = (cur + torch.tensor([0, *range(1, len(draft) + 1), *range(1, len(branch) + 1)],
                                          device=device))[None]
                allowed = branch_allowed(cur, len(draft), len(branch), device)
                if compiled is not None:
                    slots = cur + torch.arange(n, device=device)
                    logits, hidden = compiled(cache, ids, pos, allowed, slots, hidden=True)
                else:
                    logits, hidden = decode_step(model, cache, ids, pos, mask_bias(model, allowed),
                                                 hidden=True)
            else:
                pos = (cur + torch.arange(n, device=device))[None]
                attn = torch.ones((1, cur + n), dtype=torch.long, device=device)
                if heads is None:
                    logits = model(input_ids=ids, attention_mask=attn, position_ids=pos, cache=cache,
                                   use_cache=True).logits
                else:
                    logits, hidden = forward_hidden(model, input_ids=ids, attention_mask=attn,
                                                    position_ids=pos, cache=cache, use_cache=True)
            logits = logits[0].float()
            greedy = logits.argmax(-1).tolist()
            if branching:
                taken, last = st.verify_branches(draft, branch, greedy, cache, cur)
            else:
                accepted, k = st.verify(draft, greedy, cache, k=k, num_draft=num_draft, adaptive=adaptive)
                taken, last = draft[:accepted], accepted
            if heads is not None:
                state = hidden[0, last]  # where the next pending token was chosen
            cur += 1 + len(taken)
            for tok in taken:
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
            pending = int(greedy[last])
    st.tokens += len(out)
    return RowResult(out, None, reason), ttft


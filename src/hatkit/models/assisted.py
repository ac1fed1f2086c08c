"""Assisted decoding: a small draft model proposes tokens, the target verifies them at once.

The draft (same tokenizer, far fewer parameters) decodes `k` tokens greedily, one cheap pass
each; the target then scores `pending + drafts` in ONE forward pass and keeps the longest run
of drafts equal to its own greedy choices, plus one token of its own. The output is exactly
the target's greedy output; only the number of target passes drops (by the acceptance).

Both models keep a preallocated StaticCache. Invariant between steps: each cache holds every
emitted token except `pending` (the newest, not yet fed). After verification the target's
cache is rolled back over rejected drafts; the draft's cache is rolled back the same way, or,
when every draft was accepted, the last draft (never fed to the draft) is fed next round.
Single request only (a batch of one, greedy, no log-probs); batches use the plain decoder.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from .decoding import OnToken, RowResult
from .speculative import SpecStats


class DraftMismatch(ValueError):
    """The draft model cannot assist the target: its tokenizer or vocabulary differs."""


def check_draft(target_model: Any, target_tok: Any, draft_model: Any, draft_tok: Any | None) -> None:
    """Refuse a draft whose tokens do not mean the same as the target's (DraftMismatch).

    With a draft tokenizer, both vocabularies (token -> id) and end-of-sequence ids must be
    equal; without one, the models' vocabulary sizes must be equal (the draft is assumed to
    use the target's tokenizer)."""
    if draft_tok is not None:
        tv, dv = target_tok.get_vocab(), draft_tok.get_vocab()
        if tv != dv:
            only_t = sorted(set(tv) - set(dv))[:5]
            only_d = sorted(set(dv) - set(tv))[:5]
            moved = sorted(k for k in set(tv) & set(dv) if tv[k] != dv[k])[:5]
            raise DraftMismatch(
                f"draft tokenizer differs from the target's ({len(dv)} vs {len(tv)} tokens; "
                f"only in target: {only_t}, only in draft: {only_d}, different ids: {moved}); "
                "assisted decoding needs the same tokenizer")
        if target_tok.eos_token_id != draft_tok.eos_token_id:
            raise DraftMismatch(f"draft eos id {draft_tok.eos_token_id} != target eos id "
                                f"{target_tok.eos_token_id}")
    t_size = int(getattr(target_model.config, "vocab_size", 0))
    d_size = int(getattr(draft_model.config, "vocab_size", 0))
    if draft_tok is None and t_size != d_size:
        raise DraftMismatch(f"draft vocabulary size {d_size} != target's {t_size}; assisted "
                            "decoding needs the same tokenizer (pass the draft's tokenizer to "
                            "compare vocabularies)")
    if draft_tok is not None and d_size < len(draft_tok):
        raise DraftMismatch(f"draft model has {d_size} output rows for a {len(draft_tok)}-token "
                            "tokenizer")


def _static_cache(model: Any, prefix_cache: Any, prefix_len: int, total: int) -> Any:
    from transformers import StaticCache

    cache: Any = StaticCache(config=model.config, max_cache_len=total)
    if prefix_len:
        for layer, cached in zip(cache.layers, prefix_cache.layers, strict=True):
            layer.update(cached.keys[:1].contiguous(), cached.values[:1].contiguous())
    return cache


def _forward(model: Any, cache: Any, feed: Sequence[int], cur: int, last_only: bool) -> Any:
    """Feed `feed` at positions cur.. and return float logits [n, vocab] (or [1, vocab])."""
    import torch

    device = model.device
    n = len(feed)
    ids = torch.tensor([list(feed)], dtype=torch.long, device=device)
    pos = (cur + torch.arange(n, device=device))[None]
    attn = torch.ones((1, cur + n), dtype=torch.long, device=device)
    kw: dict[str, Any] = {"logits_to_keep": 1} if last_only else {}
    return model(input_ids=ids, attention_mask=attn, position_ids=pos, cache=cache,
                 use_cache=True, **kw).logits[0].float()


def decode_one_assisted(target: Any, target_prefix: Any, draft: Any, draft_prefix: Any,
                        prefix_len: int, suffix: Sequence[int], *, eos_id: int,
                        max_new_tokens: int, stopped: Callable[[int, list[int]], bool] | None = None,
                        num_draft: int = 5, stats: SpecStats | None = None, adaptive: bool = True,
                        on_token: OnToken | None = None) -> tuple[RowResult, float]:
    """Greedy decoding of one row with draft-model speculation; the target's greedy tokens.

    `target_prefix` / `draft_prefix` are each model's KV cache of the shared prompt prefix
    (None when prefix_len is 0). With `adaptive`, the draft length grows by 2 after a fully
    accepted draft and shrinks by 1 after a rejection, as in transformers' assisted generation.
    """
    import torch

    suffix = list(suffix)
    total = prefix_len + len(suffix) + max_new_tokens + num_draft + 2
    t_cache = _static_cache(target, target_prefix, prefix_len, total)
    d_cache = _static_cache(draft, draft_prefix, prefix_len, total)
    st = stats if stats is not None else SpecStats()
    out: list[int] = []
    reason = "length"
    k = num_draft
    started = time.perf_counter()
    with torch.inference_mode():
        cur = dcur = prefix_len
        pending = int(_forward(target, t_cache, suffix, cur, True)[-1].argmax())
        ttft = time.perf_counter() - started
        _forward(draft, d_cache, suffix, dcur, True)
        cur = dcur = prefix_len + len(suffix)
        todo: list[int] = []  # emitted tokens the draft's cache still lacks (before pending)

        def emit(tok: int) -> bool:
            out.append(tok)
            if on_token is not None:
                on_token(0, tok)
            return tok == eos_id or (stopped is not None and stopped(0, out))

        while True:
            if emit(pending):
                reason = "stop"
                break
            if len(out) >= max_new_tokens:
                break
            room = max_new_tokens - len(out) - 1  # the verify pass yields one token of its own
            drafts: list[int] = []
            if room > 0:
                feed = [*todo, pending]
                for _ in range(min(k, room)):
                    d = int(_forward(draft, d_cache, feed, dcur, True)[-1].argmax())
                    dcur += len(feed)
                    drafts.append(d)
                    if d == eos_id:
                        break
                    feed = [d]
                todo = []
            else:
                todo = [*todo, pending]
            greedy = _forward(target, t_cache, [pending, *drafts], cur, False).argmax(-1).tolist()
            accepted, k = st.verify(drafts, greedy, t_cache, k=k, num_draft=num_draft,
                                    adaptive=adaptive)
            cur += 1 + accepted
            if drafts:  # the draft fed pending + drafts[:-1]; keep pending + drafts[:accepted]
                extra = len(drafts) - 1 - accepted
                if extra > 0:
                    for layer in d_cache.layers:
                        layer.crop(-extra)
                    dcur -= extra
                elif accepted == len(drafts):
                    todo = [drafts[-1]]
            done = False
            for tok in drafts[:accepted]:
                if emit(tok):
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


def truncated_draft(model: Any, n_layers: int) -> Any:
    """A draft made of the target's first `n_layers` decoder layers, its embeddings, final
    norm and head (weights shared, not copied): a same-tokenizer draft for any decoder-only
    model, when no smaller sibling is at hand (early exit, as in LayerSkip's self-speculation;
    acceptance is lower than a trained draft's)."""
    import copy

    from transformers import AutoModelForCausalLM

    total = int(model.config.num_hidden_layers)
    if not 1 <= n_layers < total:
        raise ValueError(f"draft layers must be between 1 and {total - 1}, not {n_layers}")
    cfg = copy.deepcopy(model.config)
    cfg.num_hidden_layers = n_layers
    if isinstance(getattr(cfg, "layer_types", None), list):
        cfg.layer_types = cfg.layer_types[:n_layers]
    draft = AutoModelForCausalLM.from_config(cfg).to(model.device, model.dtype)  # type: ignore[no-untyped-call]
    body, target_body = draft.base_model, model.base_model
    body.embed_tokens = target_body.embed_tokens
    body.layers = type(target_body.layers)(list(target_body.layers)[:n_layers])
    body.norm = target_body.norm
    draft.lm_head = model.lm_head
    return draft.eval()

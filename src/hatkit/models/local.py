"""Local transformers backend with prefix caching and batched decoding.

Every episode of a harness starts with the same rendered system prompt (about 1,500 tokens).
Prefilling it costs seconds on a CPU, so its KV cache is computed once per prefix and
copied into each call; episodes waiting on the model at the same time decode in one batch.
Rows of a batch share the cached prefix and are padded *between* prefix and suffix, so the
prefix keeps its positions and greedy outputs match unbatched ones; decoding itself is in
`decoding.py`.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .base import ModelOutput, ModelRequest
from .chat_format import ChatTemplateFormat
from .decoding import decode_batch, decode_one_speculative
from .speculative import SpecStats

SPECULATIVE_MODES = (None, "prompt_lookup")


class LocalModel:
    """A transformers causal LM behind the ChatModel protocol."""

    def __init__(self, model: Any, tokenizer: Any, model_id: str, *,
                 native_tools: bool | None = None, max_batch: int = 8,
                 prefix_cache: bool = True, prefix_cache_size: int = 4,
                 speculative: str | None = None, num_draft: int = 8, max_ngram: int = 3,
                 min_ngram: int = 1) -> None:
        """`speculative="prompt_lookup"`: greedy requests decoded alone (a batch of one, no
        log-probs) draft tokens from their prompt and verify them in one pass; same tokens as
        plain greedy. Counters go to `stats` (spec_drafted, spec_accepted, spec_acceptance_rate)."""
        if speculative not in SPECULATIVE_MODES:
            raise ValueError(f"speculative must be one of {SPECULATIVE_MODES}, not {speculative!r}")
        self.speculative = speculative
        self.num_draft, self.max_ngram, self.min_ngram = num_draft, max_ngram, min_ngram
        self.spec = SpecStats()
        self.model = model.eval()
        self.tok = tokenizer
        self.model_id = model_id
        template = str(getattr(tokenizer, "chat_template", "") or "")
        self.native_tools = ("tools" in template) if native_tools is None else native_tools
        self.max_batch = max(1, max_batch)
        self.use_prefix_cache = prefix_cache
        self._cache: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self._cache_size = prefix_cache_size
        self._format = ChatTemplateFormat(tokenizer, self.native_tools)
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None
                          else tokenizer.eos_token_id)
        self.stats: dict[str, float] = {"prefix_hits": 0, "prefix_misses": 0, "batches": 0, "rows": 0}
        if speculative:
            self.stats.update(spec_calls=0, spec_drafted=0, spec_accepted=0, spec_steps=0,
                              spec_tokens=0, spec_acceptance_rate=0.0)

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> LocalModel:
        """Load a local checkpoint folder (fp32 on CPU; the dtype it was saved in on GPU)."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch.float32 if device == "cpu" else "auto"
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        model = model.to(device)  # type: ignore[arg-type]
        return cls(model, tok, model_id=kwargs.pop("model_id", f"local:{Path(path).name}"), **kwargs)

    @classmethod
    def default(cls, **kwargs: Any) -> LocalModel:
        """The embedded SmolLM2-135M-Instruct from the local cache (built once if needed)."""
        from .default_model import MODEL_ID, ensure_default_model

        return cls.from_pretrained(ensure_default_model(), model_id=f"local:{MODEL_ID}", **kwargs)

    def token_format(self) -> ChatTemplateFormat:
        return self._format

    # -- generation --
    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        outputs: list[ModelOutput | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            if r.prompt_ids is None:
                raise ValueError("LocalModel needs prompt_ids (the agent loop provides them)")
            prefix = tuple(r.prompt_ids[: r.prefix_len]) if self.use_prefix_cache else ()
            key = (prefix, r.temperature, r.top_p, tuple(r.stop), r.max_new_tokens)
            groups.setdefault(key, []).append(i)
        for idx in groups.values():
            for start in range(0, len(idx), self.max_batch):
                chunk = idx[start:start + self.max_batch]
                try:
                    results = self._generate_batch([requests[i] for i in chunk])
                except Exception as exc:  # noqa: BLE001 - a failed call is data, not a crash
                    results = [ModelOutput("", finish_reason="error", error=f"{type(exc).__name__}: {exc}")
                               for _ in chunk]
                for i, out in zip(chunk, results, strict=True):
                    outputs[i] = out
        return [o for o in outputs if o is not None]

    def _prefix_cache(self, prefix: tuple[int, ...]) -> Any:
        import torch

        if prefix in self._cache:
            self._cache.move_to_end(prefix)
            self.stats["prefix_hits"] += 1
            return self._cache[prefix]
        self.stats["prefix_misses"] += 1
        with torch.inference_mode():
            out = self.model(torch.tensor([list(prefix)], device=self.model.device), use_cache=True)
        cache = out.get("cache") or out.get("past_key_values")
        self._cache[prefix] = cache
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)
        return cache

    def _generate_batch(self, reqs: list[ModelRequest]) -> list[ModelOutput]:
        first = reqs[0]
        prompts = [list(r.prompt_ids or []) for r in reqs]
        p_len = first.prefix_len if self.use_prefix_cache else 0
        if any(len(p) <= p_len for p in prompts):
            p_len = 0  # nothing after the prefix: decode without the cache
        t0 = time.perf_counter()  # a prefix-cache miss is part of this call's latency
        cache = self._prefix_cache(tuple(prompts[0][:p_len])) if p_len else None
        prefill = time.perf_counter() - t0
        texts = [""] * len(reqs)

        def stopped(row: int, ids: list[int]) -> bool:
            texts[row] += self.tok.decode(ids[-1:], skip_special_tokens=False)
            return any(s in texts[row][-(len(s) + 16):] for s in first.stop)

        started = time.perf_counter()
        if (self.speculative == "prompt_lookup" and len(reqs) == 1 and first.temperature <= 0
                and not first.logprobs):
            st = SpecStats()
            row, ttft = decode_one_speculative(
                self.model, cache, p_len, prompts[0][p_len:], context=prompts[0],
                eos_id=self._format.eos_id, max_new_tokens=first.max_new_tokens,
                stopped=stopped if first.stop else None, num_draft=self.num_draft,
                max_ngram=self.max_ngram, min_ngram=self.min_ngram, stats=st)
            rows = [row]
            self._record_spec(st)
        else:
            rows, ttft = decode_batch(
                self.model, cache, p_len, [p[p_len:] for p in prompts], eos_id=self._format.eos_id,
                pad_id=self.pad_id, max_new_tokens=first.max_new_tokens,
                temperature=first.temperature, top_p=first.top_p,
                logprobs=any(r.logprobs for r in reqs), stopped=stopped if first.stop else None)
        total = time.perf_counter() - started + prefill
        ttft += prefill
        self.stats["batches"] += 1
        self.stats["rows"] += len(reqs)
        return [ModelOutput(
            text=self.tok.decode(row.token_ids, skip_special_tokens=True), token_ids=row.token_ids,
            logprobs=row.logprobs if r.logprobs else None,
            finish_reason="stop" if row.finish_reason == "stop" else "length",
            prompt_tokens=len(p), completion_tokens=len(row.token_ids), ttft_s=ttft, total_s=total)
            for r, p, row in zip(reqs, prompts, rows, strict=True)]

    def _record_spec(self, st: SpecStats) -> None:
        self.spec.add(st)
        self.stats["spec_calls"] += 1
        self.stats["spec_drafted"] = self.spec.drafted
        self.stats["spec_accepted"] = self.spec.accepted
        self.stats["spec_steps"] = self.spec.steps
        self.stats["spec_tokens"] = self.spec.tokens
        self.stats["spec_acceptance_rate"] = round(self.spec.acceptance_rate, 4)

"""Local transformers backend with prefix caching and batched decoding.

Every episode of a harness starts with the same rendered system prompt (800-1,500 tokens).
Prefilling it costs seconds on a CPU, so its KV cache is computed once per prefix and
copied into each call; episodes waiting on the model at the same time decode in one batch.
Rows of a batch share one copy of the cached prefix (packed behind it, each seeing only the
prefix and itself, with its own positions), so greedy outputs match unbatched ones; decoding
itself is in `decoding.py` (plain and prompt lookup) and `assisted.py` (draft model).

Each turn of an agent episode sends the whole conversation again. The row cache keeps the keys
and values of recently finished rows (after the prefix), so a prompt that continues one (its
reply plus a tool result) prefills only the new tokens: half the time of an evaluation item
(bench/eval_turns.py).

Weights: `precision="int8"` (or "bf16") converts the model's weights for faster decoding on a
CPU (see `precision.py`); `--model local@int8` and `CKPT@int8` select it from the command line.

Streaming: `generate(requests, streams=[sink, ...])` calls each request's sink with text
deltas as its row's tokens are decided (batched rows each feed their own sink), so a server
can send tokens before the call returns.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .assisted import check_draft, decode_one_assisted
from .base import ModelOutput, ModelRequest
from .chat_format import ChatTemplateFormat
from .compiled_step import COMPILED_SUFFIX
from .decoding import RowKV, common_prefix_len, decode_batch, decode_one_speculative
from .errors import BackendUnavailable, ContextTooLong
from .packing import PackedLinears
from .precision import apply_precision, calibration_ids, precision_of, resolve_precision
from .speculative import SpecStats
from .streaming import StreamDetokenizer, TextSink, stop_reached

SPECULATIVE_MODES = (None, "prompt_lookup", "draft", "mtp")
LOOKUP_BRANCH = 2
"""Prompt-lookup tokens verified beside MTP heads' drafts by default (see LocalModel). On the
cpu-sitting checkpoint's domain replies (bench/latency.py, 8 prompts, idle, two runs): 3.02
tokens per verify pass against the heads' 2.34, 1.59x / 1.52x greedy's tokens/s with prefill
(heads only 1.35x / 1.35x), output identical."""
UNCOMPILABLE = ("int8", "int8h")
"""Precisions `compiled` refuses: int8's fbgemm kernels take packed parameters dynamo cannot
trace, so each layer would split the graph (and its fused q/k/v recompile at every call).
Measured on the tiny test model: 9+ recompilations and the recompile limit hit."""
ROW_CACHE_BYTES = 2 << 30
"""The row cache's memory bound (oldest rows leave first), whatever `row_cache_size` says."""
log = logging.getLogger(__name__)


class LocalModel:
    """A transformers causal LM behind the ChatModel protocol."""

    def __init__(self, model: Any, tokenizer: Any, model_id: str, *,
                 native_tools: bool | None = None, max_batch: int = 8,
                 prefix_cache: bool = True, prefix_cache_size: int = 4,
                 speculative: str | None = None, num_draft: int = 8, max_ngram: int = 3,
                 min_ngram: int = 1, draft_model: Any = None, draft_tokenizer: Any = None,
                 draft_tokens: int = 5, precision: str | None = None,
                 row_cache_size: int = 32, draft_heads: Any = None,
                 pack_weights: bool = True, lookup_branch: int = LOOKUP_BRANCH,
                 draft_confidence: float | None = None, compiled: bool = False) -> None:
        """`precision` ("fp32", "bf16", "int8", "int8h", "int8w", "auto"; None: as loaded) converts
        `model`'s weights in place (pass a copy to keep the original); `self.precision` names
        what it runs in.

        Speculative decoding applies to greedy requests decoded alone (a batch of one, no
        log-probs) and gives the same tokens as plain greedy; other calls decode plainly.
        `speculative="prompt_lookup"`: drafts are copied from the prompt (`num_draft`,
        `max_ngram`, `min_ngram`). `speculative="draft"`: `draft_model` (a model, or a checkpoint
        folder) with the same tokenizer proposes `draft_tokens` tokens per step; passing a
        draft_model alone selects it. A draft whose vocabulary differs is refused
        (DraftMismatch). `speculative="mtp"`: trained heads on the target's last hidden state
        (`draft_heads`: models.mtp.MTPHeads or its folder; `hatkit train draft` makes them)
        propose up to their number of tokens per pass, at almost no cost of their own; passing
        draft_heads alone selects it; each verify pass also checks up to `lookup_branch` tokens
        copied from the context by prompt lookup as a second branch (0: heads only; see
        `decode_one_speculative`); a draft stops before the first guess where the heads' joint
        probability falls below `draft_confidence` (default mtp.DRAFT_CONFIDENCE; 0: always
        their full number). Counters go to `stats` (spec_drafted, spec_accepted, ...).

        `row_cache_size`: how many finished rows keep their keys and values (after the shared
        prefix), so that a later call whose prompt continues one (the next turn of an agent
        episode: the conversation so far plus a tool result) prefills only the new tokens; 0
        turns it off. About 45 KB a token for the default model; at most ROW_CACHE_BYTES in all.

        `pack_weights` (CPU): the Linear layers run on weights pre-packed for the CPU's matrix
        kernels during each call (`packing.py`: about 2.5x faster layers at batch 8 in fp32,
        2x at batch 1 in bf16, for a packed copy of the weights: +780 MB fp32, +270 MB bf16
        for the default model).

        `compiled` (Llama-family models): decode steps and speculative verify passes (not a
        draft model's) run compiled by inductor (`compiled_step.py`: decode_batch 1.4-1.8x faster
        in bf16 and int8w on the default model, 1.2x in fp32, for about a minute of compiling
        per row bucket in each process; greedy output can differ from the eager decoder's after
        a near tie; `precompile()` compiles up front).
        Weights are then not pre-packed (inductor packs its own); prefill stays eager."""
        if draft_model is not None and speculative is None:
            speculative = "draft"
        if draft_heads is not None and speculative is None:
            speculative = "mtp"
        if speculative not in SPECULATIVE_MODES:
            raise ValueError(f"speculative must be one of {SPECULATIVE_MODES}, not {speculative!r}")
        if speculative == "draft" and draft_model is None:
            raise ValueError("speculative='draft' needs draft_model (a model or a checkpoint folder)")
        if speculative == "mtp" and draft_heads is None:
            raise ValueError("speculative='mtp' needs draft_heads (trained with `hatkit train draft`)")
        if precision is not None:
            calibration = calibration_ids(tokenizer) if precision.startswith("int8") else None
            model = apply_precision(model, precision, calibration)
        self.precision = precision_of(model)
        self.speculative = speculative
        self.num_draft, self.max_ngram, self.min_ngram = num_draft, max_ngram, min_ngram
        self.lookup_branch = max(0, lookup_branch)
        from .mtp import DRAFT_CONFIDENCE

        confidence = DRAFT_CONFIDENCE if draft_confidence is None else float(draft_confidence)
        if not 0.0 <= confidence <= 1.0:
            raise ValueError(f"draft_confidence must be within [0, 1], not {confidence}")
        self.draft_confidence = confidence
        self.draft_tokens = max(1, draft_tokens)
        self.draft: Any = None
        if speculative == "draft":
            if isinstance(draft_model, str | Path):
                draft_model, draft_tokenizer = _load_draft(draft_model, model)
            check_draft(model, tokenizer, draft_model, draft_tokenizer)
            self.draft = draft_model.to(model.device).eval()
        self.heads: Any = None
        if speculative == "mtp":
            from .mtp import MTPHeads

            if isinstance(draft_heads, str | Path):
                draft_heads = MTPHeads.load(Path(draft_heads), target=model)
            self.heads = draft_heads.to(model.device).eval()
        self._draft_cache: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self.spec = SpecStats()
        self.model = model.eval()
        self._compiled: Any = None
        if compiled:
            from .compiled_step import CompiledStep

            if self.precision in UNCOMPILABLE:
                raise ValueError(f"compiled decoding does not take {self.precision} weights: their "
                                 "quantized kernels break the compiled graph at every layer; use "
                                 "int8w (int8 weights, bf16 inputs), bf16 or fp32")

            self._compiled = CompiledStep(model)
            pack_weights = False
        self._packing = PackedLinears(model) if pack_weights else None
        self.tok = tokenizer
        self.model_id = model_id
        template = str(getattr(tokenizer, "chat_template", "") or "")
        self.native_tools = ("tools" in template) if native_tools is None else native_tools
        self.max_batch = max(1, max_batch)
        self.use_prefix_cache = prefix_cache
        self._cache: OrderedDict[tuple[int, ...], Any] = OrderedDict()
        self._cache_size = prefix_cache_size
        self._rows: OrderedDict[tuple[int, ...], tuple[int, int, RowKV]] = OrderedDict()
        """prompt + generated ids -> (its prefix length, the prompt's length, the row's keys and
        values after the prefix)"""
        self._rows_size = max(0, row_cache_size)
        self._format = ChatTemplateFormat(tokenizer, self.native_tools)
        self.context_tokens = int(getattr(model.config, "max_position_embeddings", None) or 2**31)
        """A prompt must be shorter than this (a longer one is a ContextTooLong output)."""
        self.pad_id = int(tokenizer.pad_token_id if tokenizer.pad_token_id is not None
                          else tokenizer.eos_token_id)
        self.stats: dict[str, float] = {"prefix_hits": 0, "prefix_misses": 0, "batches": 0, "rows": 0,
                                        "row_hits": 0, "row_tokens_reused": 0}
        if speculative:
            self.stats.update(spec_calls=0, spec_drafted=0, spec_accepted=0, spec_steps=0,
                              spec_tokens=0, spec_acceptance_rate=0.0)

    @classmethod
    def from_pretrained(cls, path: str | Path, **kwargs: Any) -> LocalModel:
        """Load a local checkpoint folder (fp32 on CPU; the dtype it was saved in on GPU), in
        `precision` if given (the model id then ends in `@int8` / `@bf16`, and `+compiled` with
        `compiled`, so traces and evaluation results say which weights and kernels answered)."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch.float32 if device == "cpu" else "auto"
        tok = AutoTokenizer.from_pretrained(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
        model = model.to(device)  # type: ignore[arg-type]
        model_id = kwargs.pop("model_id", f"local:{Path(path).name}")
        if kwargs.get("speculative") == "mtp" and kwargs.get("draft_heads") is None:
            from .mtp import MTPHeads

            kwargs["draft_heads"] = MTPHeads.for_checkpoint(Path(path), model)
        if kwargs.get("precision") is not None:
            kwargs["precision"] = resolve_precision(kwargs["precision"], device)
        if kwargs.get("precision") not in (None, "fp32"):
            model_id += f"@{kwargs['precision']}"
        if kwargs.get("compiled"):
            model_id += COMPILED_SUFFIX
        return cls(model, tok, model_id=model_id, **kwargs)

    @classmethod
    def default(cls, **kwargs: Any) -> LocalModel:
        """The embedded SmolLM2-135M-Instruct from the local cache (built once if needed)."""
        from .default_model import MODEL_ID, ensure_default_model

        return cls.from_pretrained(ensure_default_model(), model_id=f"local:{MODEL_ID}", **kwargs)

    def token_format(self) -> ChatTemplateFormat:
        return self._format

    def clear_caches(self) -> None:
        """Forget every cached prefix and row, and the compiled decode step's frozen weights
        (call after the weights change, e.g. an RL step)."""
        self._cache.clear()
        if self._compiled is not None:
            self._compiled.reset()
        self._draft_cache.clear()
        self._rows.clear()

    def _known_row(self, prompt: list[int], p_len: int) -> RowKV | None:
        """The cached row that `prompt` continues (it shares the row's prompt and some of its
        generated tokens), cut to the tokens they share; None when none does. The entry
        leaves the cache, as the new row extends it. A prompt that only repeats a cached
        prompt is computed afresh, so the same request twice gives the same output."""
        best, best_n = None, 0
        whole = tuple(prompt)
        for key, (prefix_len, prompt_len, _) in self._rows.items():
            if prefix_len != p_len:  # its keys and values start after another prefix
                continue
            n = common_prefix_len(key, whole)  # a different prefix shares < p_len <= prompt_len
            if n > prompt_len and n > best_n:
                best, best_n = key, n
        usable = min(best_n, len(prompt) - 1) - p_len  # the last prompt token is always computed
        if best is None or usable <= 0:
            return None
        kv = self._rows.pop(best)[2]
        self.stats["row_hits"] += 1
        self.stats["row_tokens_reused"] += usable
        return RowKV([(k[:, :, :usable], v[:, :, :usable]) for k, v in kv.layers])

    def _keep_rows(self, prompts: list[list[int]], p_len: int, rows: list[Any]) -> None:
        for prompt, row in zip(prompts, rows, strict=True):
            if row.kv is None:
                continue
            self._rows[tuple(prompt + row.token_ids[:-1])] = (p_len, len(prompt), row.kv)
            row.kv = None
        total = sum(kv.nbytes() for _, _, kv in self._rows.values())
        while self._rows and (len(self._rows) > self._rows_size or total > ROW_CACHE_BYTES):
            total -= self._rows.popitem(last=False)[1][2].nbytes()

    # -- generation --
    def generate(self, requests: Sequence[ModelRequest],
                 streams: Sequence[TextSink | None] | None = None) -> list[ModelOutput]:
        """One output per request; `streams[i]` (optional) receives request i's text as it is
        generated. A sink that raises is dropped for the rest of the call (logged with its
        traceback and counted in `stats["sink_errors"]`); decoding goes on.

        A request that does not fit the context comes back as a ContextTooLong output and an
        exhausted accelerator as BackendUnavailable; any other exception is a bug and raises."""
        if streams is not None and len(streams) != len(requests):
            raise ValueError(f"{len(streams)} streams for {len(requests)} requests")
        outputs: list[ModelOutput | None] = [None] * len(requests)
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, r in enumerate(requests):
            if r.prompt_ids is None:
                raise ValueError("LocalModel needs prompt_ids (the agent loop provides them)")
            if len(r.prompt_ids) >= self.context_tokens:
                outputs[i] = ModelOutput.failed(ContextTooLong(
                    f"the prompt has {len(r.prompt_ids)} tokens; {self.model_id}'s context holds "
                    f"{self.context_tokens}"))
                continue
            prefix = tuple(r.prompt_ids[: r.prefix_len]) if self.use_prefix_cache else ()
            key = (prefix, r.temperature, r.top_p, tuple(r.stop), r.max_new_tokens)
            groups.setdefault(key, []).append(i)
        for idx in groups.values():
            for start in range(0, len(idx), self.max_batch):
                chunk = idx[start:start + self.max_batch]
                sinks = [streams[i] if streams is not None else None for i in chunk]
                try:
                    results = self._generate_batch([requests[i] for i in chunk], sinks)
                except (MemoryError, _torch_oom()) as exc:  # the device ran out, not a bug
                    results = [ModelOutput.failed(BackendUnavailable(
                        f"out of memory decoding {len(chunk)} request(s): {exc}")) for _ in chunk]
                for i, out in zip(chunk, results, strict=True):
                    outputs[i] = out
        return [o for o in outputs if o is not None]

    def _prefix_cache(self, prefix: tuple[int, ...], draft: bool = False) -> Any:
        import torch

        store, model = (self._draft_cache, self.draft) if draft else (self._cache, self.model)
        if prefix in store:
            store.move_to_end(prefix)
            if not draft:
                self.stats["prefix_hits"] += 1
            return store[prefix]
        if not draft:
            self.stats["prefix_misses"] += 1
        with torch.inference_mode():
            out = model(torch.tensor([list(prefix)], device=model.device), use_cache=True)
        cache = out.get("cache") or out.get("past_key_values")
        store[prefix] = cache
        while len(store) > self._cache_size:
            store.popitem(last=False)
        return cache

    def _on_token(self, sinks: Sequence[TextSink | None]) -> Callable[[int, int], None] | None:
        """The decoder's per-token callback feeding each row's sink (None: no streaming)."""
        if not any(sinks):
            return None
        rows: list[StreamDetokenizer | None] = [
            StreamDetokenizer(self.tok, self._format.eos_id, s) if s is not None else None for s in sinks]

        def on_token(row: int, token: int) -> None:
            d = rows[row]
            if d is None:
                return
            try:
                d.push(token)
            except Exception:
                log.exception("a stream consumer raised; it gets no more text in this call")
                self.stats["sink_errors"] = self.stats.get("sink_errors", 0) + 1
                rows[row] = None

        return on_token

    @property
    def is_compiled(self) -> bool:
        """Whether decode steps run compiled (`compiled=True`, a `+compiled` model spec)."""
        return self._compiled is not None

    def precompile(self) -> list[int]:
        """With `compiled`, compile now the decode steps this model will run: every row bucket up
        to `max_batch`, and the verify passes' buckets when it decodes speculatively (a server
        calls this at start, so no request waits a minute on the compiler). Returns the row
        buckets compiled ([] without `compiled`)."""
        if self._compiled is None:
            return []
        from .compiled_step import CompiledStep

        def upto(n: int) -> tuple[int, ...]:
            return tuple(sorted({b for b in map(CompiledStep.bucket, range(1, n + 1)) if b is not None}))

        rows = upto(self.max_batch)
        self._compiled.precompile(rows)
        if self.speculative in ("prompt_lookup", "mtp"):
            widest = 1 + (self.heads.meta.num_heads + self.lookup_branch if self.heads is not None
                          else self.num_draft)
            self._compiled.precompile(upto(widest), hidden=True)
        return list(rows)

    @contextmanager
    def packed(self) -> Iterator[None]:
        """The block runs the model on packed weights (when `pack_weights`; see packing.py)."""
        if self._packing is None:
            yield
            return
        with self._packing.active():
            yield

    def _generate_batch(self, reqs: list[ModelRequest],
                        sinks: Sequence[TextSink | None] = ()) -> list[ModelOutput]:
        with self.packed():
            return self._decode_batch(reqs, sinks)

    def _decode_batch(self, reqs: list[ModelRequest],
                      sinks: Sequence[TextSink | None] = ()) -> list[ModelOutput]:
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
            return stop_reached(texts[row], first.stop)

        on_token = self._on_token(list(sinks) or [None] * len(reqs))
        started = time.perf_counter()
        if self.speculative and len(reqs) == 1 and first.temperature <= 0 and not first.logprobs:
            st = SpecStats()
            stop_fn = stopped if first.stop else None
            if self.speculative == "draft":
                d_cache = self._prefix_cache(tuple(prompts[0][:p_len]), draft=True) if p_len else None
                row, ttft = decode_one_assisted(
                    self.model, cache, self.draft, d_cache, p_len, prompts[0][p_len:],
                    eos_id=self._format.eos_id, max_new_tokens=first.max_new_tokens,
                    stopped=stop_fn, num_draft=self.draft_tokens, stats=st, on_token=on_token)
            else:
                row, ttft = decode_one_speculative(
                    self.model, cache, p_len, prompts[0][p_len:], context=prompts[0],
                    eos_id=self._format.eos_id, max_new_tokens=first.max_new_tokens,
                    stopped=stop_fn, num_draft=self.num_draft, max_ngram=self.max_ngram,
                    min_ngram=self.min_ngram, stats=st, on_token=on_token, heads=self.heads,
                    lookup_branch=self.lookup_branch, draft_confidence=self.draft_confidence,
                    compiled=self._compiled)
            rows = [row]
            self._record_spec(st)
        else:
            use_rows = bool(self._rows_size and p_len)
            known = [self._known_row(p, p_len) for p in prompts] if use_rows else None
            rows, ttft = decode_batch(
                self.model, cache, p_len, [p[p_len:] for p in prompts], eos_id=self._format.eos_id,
                max_new_tokens=first.max_new_tokens,
                temperature=first.temperature, top_p=first.top_p,
                logprobs=any(r.logprobs for r in reqs), stopped=stopped if first.stop else None,
                on_token=on_token, known=known, keep_kv=use_rows, compiled=self._compiled)
            if use_rows:
                self._keep_rows(prompts, p_len, rows)
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
        if self.spec.branch_drafted:
            self.stats["spec_branch_drafted"] = self.spec.branch_drafted
            self.stats["spec_branch_accepted"] = self.spec.branch_accepted


def _torch_oom() -> type[BaseException]:
    import torch

    return torch.OutOfMemoryError


def _load_draft(path: str | Path, target: Any) -> tuple[Any, Any]:
    """A draft checkpoint folder -> (model in the target's dtype, its tokenizer)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise ValueError(f"draft model '{folder}': not a checkpoint folder (no config.json)")
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=target.dtype)
    return model, tok

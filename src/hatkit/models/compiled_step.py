"""The decode step compiled by inductor (torch.compile): fused kernels instead of eager ops.

Why: on a CPU a decode step of the default model is 30 layers of about 15 small ops, and eager
PyTorch pays a dispatch for each (about 12 ms a step that no weight precision removes; see
bench/README's decode row). Inductor fuses the element-wise work (norms, rotary, residuals)
into a few C++ loops, and with `freezing` (weights folded in as constants) and max-autotune it
picks, per matrix product, the fastest of oneDNN's kernel and its own AMX micro-GEMMs. Measured
by bench/decode.py (default model, 832-token prompt, 2 threads, decode_batch with prefill):
bf16 1.70x eager at batch 1 and 1.36x at batch 8, int8w 1.72x and 1.79x, fp32 1.20x and 1.24x.

Shapes: a compiled graph is specialised to its input shapes, so the number of rows a step feeds
is padded up to a bucket (1, 2, 4, 8, ...: a few compilations per process, not one per
batch size), while the cache's length and the attended width stay symbolic (one graph for any
prompt length). A padded row writes its key and value to a scratch slot past the rows' own
(the cache needs one spare slot) and attends to slot 0 only; its logits are dropped.

The arithmetic is `lean_step.decode_step`'s, but fused kernels do not round exactly as eager
ones do, so greedy output can differ from the eager decoder's after a near tie: the decode
bench reports how many leading greedy tokens each row keeps (fp32: all; bf16, int8w: up to
a near tie).

Cost: compiling takes about a minute per row bucket on 2 cores (20 s without max-autotune),
in every process: the frozen graph holds oneDNN-packed weights, which inductor's on-disk graph
cache cannot store ("mkldnn tensors unpickleable"). Without weight prepacking the graph is
cached (a second process compiled in 33 s instead of 63), but its steps ran about 1.6x slower,
so prepacking stays on. Worth it where a process decodes long: a server, an evaluation of
several hundred episodes. Frozen weights are read when a graph is compiled: after the weights
change (an RL step) call `reset()`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from .lean_step import decode_step, mask_bias, supports

COMPILED_SUFFIX = "+compiled"
"""Ends a `--model` spec (local+compiled, CKPT@bf16+compiled) and the model id it loads as."""
ROW_BUCKETS = (1, 2, 4, 8, 16, 32, 64)
"""Row counts a step is padded up to (more rows than the last one run eagerly)."""


class CompiledStep:
    """`lean_step.decode_step` compiled per row bucket for one model (Llama family)."""

    def __init__(self, model: Any, *, autotune: bool = True, backend: Any = "inductor") -> None:
        """`autotune`: inductor's max-autotune (about three times the compile time; in a
        prototype of this step, bf16 at batch 1: 2.1x faster steps than eager with it, 1.4x
        without). `backend`: another torch.compile backend (tests trace with "eager": the same
        graphs, no code generated)."""
        if not supports(model):
            raise ValueError("a compiled decode step needs a Llama-family model in eval mode "
                             f"(lean_step.supports); got {type(model).__name__}")
        self.model = model
        self.autotune = autotune
        self.backend = backend
        self.compile_seconds: dict[tuple[int, bool], float] = {}
        """(row bucket, hidden) -> seconds its first call took (compilation included)."""
        self._fns: dict[bool, Any] = {}

    def reset(self) -> None:
        """Forget the compiled graphs (their frozen weights are stale after a weight update)."""
        self._fns.clear()
        self.compile_seconds.clear()

    def precompile(self, rows: tuple[int, ...] = (1, 8), *, hidden: bool = False) -> None:
        """Compile the buckets of these row counts now, on a scratch cache (one graph serves any
        cache length), so that no timed or served call pays for it."""
        import torch
        from transformers import StaticCache

        device = self.model.device
        width = 48  # attended slots; the scratch cache is longer, as a real one is
        for n in rows:
            cache = StaticCache(config=self.model.config, max_cache_len=width + n + 8)
            cache.early_initialization(1, self.model.config.num_key_value_heads,
                                       _head_dim(self.model.config), self._cache_dtype(), device)
            allowed = torch.ones((n, width + n), dtype=torch.bool, device=device).tril(width)
            with torch.inference_mode():
                self(cache, torch.zeros((1, n), dtype=torch.long, device=device),
                     torch.full((1, n), width, device=device), allowed,
                     width + torch.arange(n, device=device), hidden=hidden)

    def _cache_dtype(self) -> Any:
        """The dtype of the keys a forward writes: its hidden state's, the embedding's."""
        return self.model.get_input_embeddings().weight.dtype

    @staticmethod
    def bucket(n: int) -> int | None:
        """The row count `n` rows are padded to; None when more than the largest bucket."""
        return next((b for b in ROW_BUCKETS if b >= n), None)

    def __call__(self, cache: Any, input_ids: Any, position_ids: Any, allowed: Any,
                 slots: Any, *, hidden: bool = False) -> Any:
        """Logits [1, n, vocab] of `input_ids` [1, n] at `position_ids` [1, n], writing their keys
        and values to cache `slots` [n]; `allowed` [n, kv] (bool): the cache slots each row
        attends to. The cache needs one slot past every slot a row writes (`slots`' maximum
        plus one at least, the scratch slot of padded rows). With `hidden`, (logits, last
        hidden state) as decode_step's (speculative verify passes). Called in inference mode."""
        import torch

        n = int(input_ids.shape[-1])
        # a tensor made outside inference mode carries another dispatch key: a graph apiece
        input_ids, position_ids, slots = (t if t.is_inference() else t.clone()
                                          for t in (input_ids, position_ids, slots))
        b = self.bucket(n)
        if b is None:  # wider than any bucket: the eager step, same arithmetic
            return decode_step(self.model, cache, input_ids, position_ids, mask_bias(self.model, allowed),
                               hidden=hidden, slots=slots)
        if b > n:
            pad = b - n
            scratch = int(cache.layers[0].keys.shape[2]) - 1
            input_ids = torch.cat([input_ids, input_ids.new_zeros((1, pad))], 1)
            position_ids = torch.cat([position_ids, position_ids.new_zeros((1, pad))], 1)
            slots = torch.cat([slots, slots.new_full((pad,), scratch)])
            extra = allowed.new_zeros((pad, allowed.shape[1]))
            extra[:, 0] = True
            allowed = torch.cat([allowed, extra], 0)
        bias = mask_bias(self.model, allowed)
        for layer in cache.layers:
            _as_plain_input(layer.keys, layer.values, layer.cumulative_length)
            torch._dynamo.mark_dynamic(layer.keys, 2)
            torch._dynamo.mark_dynamic(layer.values, 2)
        torch._dynamo.mark_dynamic(bias, 3)
        key = (b, hidden)
        first = key not in self.compile_seconds
        started = time.perf_counter()
        with self._config():
            out = self._compiled(hidden)(self.model, cache, input_ids, position_ids, bias, slots)
        if first:
            self.compile_seconds[key] = time.perf_counter() - started
        return (out[0][:, :n], out[1][:, :n]) if hidden else out[:, :n]

    def _compiled(self, hidden: bool) -> Any:
        if hidden not in self._fns:
            import torch

            self._fns[hidden] = torch.compile(_own_step(hidden), backend=self.backend, dynamic=False)
        return self._fns[hidden]

    def _config(self) -> Any:
        """Inductor's settings for a call: read while dynamo traces (freezing decides there
        whether weights become constants), so torch.compile's `options`, applied later, would
        leave the weights as graph inputs and the products on plain aten::mm."""
        import contextlib

        if self.backend != "inductor":
            return contextlib.nullcontext()
        import torch._inductor.config as inductor

        return inductor.patch(freezing=True, max_autotune=self.autotune)


def _as_plain_input(*tensors: Any) -> None:
    """Drop transformers' static-address mark from a StaticCache's tensors: with freezing,
    inductor folds static-address inputs into the graph as constants, so a graph compiled on
    one cache would go on writing to that cache (and index out of its bounds) on every other."""
    for t in tensors:
        if hasattr(t, "_dynamo_static_input_type"):
            del t._dynamo_static_input_type


def _head_dim(config: Any) -> int:
    return int(getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads)


def _own_step(hidden: bool) -> Callable[..., Any]:
    """A copy of `_step` (or `_step_hidden`) with its own code object. Dynamo keeps compiled
    graphs per code object and stops compiling one after `recompile_limit` (8) graphs, so each
    CompiledStep, and each reset, gets a code object of its own: models and buckets never crowd
    each other out, and a stale graph is never found again."""
    import types

    step = _step_hidden if hidden else _step
    return types.FunctionType(step.__code__.replace(), step.__globals__, step.__name__)


def _step(model: Any, cache: Any, input_ids: Any, position_ids: Any, bias: Any, slots: Any) -> Any:
    return decode_step(model, cache, input_ids, position_ids, bias, slots=slots)


def _step_hidden(model: Any, cache: Any, input_ids: Any, position_ids: Any, bias: Any, slots: Any) -> Any:
    return decode_step(model, cache, input_ids, position_ids, bias, hidden=True, slots=slots)

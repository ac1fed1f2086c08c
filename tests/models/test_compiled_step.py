"""The compiled decode step (models/compiled_step.py): rows padded to a bucket decode exactly as
the eager step (traced with the "eager" backend: the same graph, no generated code), one graph
serves every prompt length, a real inductor compile agrees with the eager decoder, and
`+compiled` reaches LocalModel from a --model spec."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import StaticCache

from hatkit.models import compiled_step
from hatkit.models.compiled_step import CompiledStep
from hatkit.models.decoding import decode_batch
from hatkit.models.local import LocalModel
from hatkit.models.select import split_compiled
from tiny import tiny_llama, tiny_requests, tiny_tokenizer

VOCAB, EOS = 64, 64  # EOS out of the vocabulary: rows end where `stopped` says


class CountingBackend:
    """A torch.compile backend that runs the traced graph as is and counts compilations."""

    def __init__(self) -> None:
        self.graphs = 0

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        self.graphs += 1
        return gm.forward


def _prefix_cache(model: Any, prefix: list[int]) -> StaticCache:
    cache = StaticCache(config=model.config, max_cache_len=len(prefix))
    with torch.inference_mode():
        model(input_ids=torch.tensor([prefix]), cache=cache, use_cache=True,
              position_ids=torch.arange(len(prefix))[None])
    return cache


def _decode(model: Any, prefix: list[int], suffixes: list[list[int]], compiled: Any = None,
            ends: dict[int, int] | None = None) -> list[Any]:
    """Greedy rows; row r stops after ends[r] tokens (so the batch shrinks through buckets)."""
    ends = ends or {}
    rows, _ = decode_batch(model, _prefix_cache(model, prefix), len(prefix), suffixes, eos_id=EOS,
                           max_new_tokens=12, keep_kv=True, compiled=compiled,
                           stopped=lambda r, ids: len(ids) >= ends.get(r, 99))
    return rows


SUFFIXES = [[4, 5], [6, 7, 8], [9], [10, 11, 12, 13], [14]]
ENDS = {0: 3, 1: 12, 2: 7, 3: 5, 4: 2}  # 5 live rows (bucket 8), then 4, 3 (bucket 4), 2, 1


def test_bucket_pads_row_counts_up_and_gives_up_past_the_largest() -> None:
    assert [CompiledStep.bucket(n) for n in (1, 2, 3, 5, 8, 9)] == [1, 2, 4, 8, 8, 16]
    assert CompiledStep.bucket(compiled_step.ROW_BUCKETS[-1] + 1) is None


def test_padded_rows_decode_exactly_as_the_eager_step() -> None:
    """Tokens, finish reasons and every row's own keys and values are the eager decoder's: the
    padded rows write only to the scratch slot and never reach a live row."""
    model = tiny_llama(VOCAB, seed=4)
    prefix = [1, 5, 7, 9, 11, 3, 8]
    ref = _decode(model, prefix, SUFFIXES, ends=ENDS)
    backend = CountingBackend()
    step = CompiledStep(model, backend=backend)
    got = _decode(model, prefix, SUFFIXES, step, ends=ENDS)
    assert [r.token_ids for r in got] == [r.token_ids for r in ref]
    assert [len(r.token_ids) for r in got] == [ENDS[i] for i in range(5)]
    assert [r.finish_reason for r in got] == [r.finish_reason for r in ref]
    for a, b in zip(got, ref, strict=True):
        for (ka, va), (kb, vb) in zip(a.kv.layers, b.kv.layers, strict=True):
            assert torch.equal(ka, kb) and torch.equal(va, vb)
    # 5 rows -> bucket 8, then 4 and 3 -> 4, 2, 1
    assert sorted(step.compile_seconds) == [(1, False), (2, False), (4, False), (8, False)]
    assert backend.graphs == 4


def test_one_graph_serves_every_prompt_length() -> None:
    """The cache's length and the attended width are symbolic: other prefix and suffix lengths
    and another max_new_tokens reuse the graph of their row bucket."""
    model = tiny_llama(VOCAB, seed=5)
    backend = CountingBackend()
    step = CompiledStep(model, backend=backend)
    for prefix in ([1, 5, 7], [1, 5, 7, 9, 11, 3, 8, 20, 21, 22, 23], list(range(3, 40))):
        assert [r.token_ids for r in _decode(model, prefix, [[4, 5], [9]], step)] == \
            [r.token_ids for r in _decode(model, prefix, [[4, 5], [9]])]
    assert backend.graphs == 1 and list(step.compile_seconds) == [(2, False)]


def test_precompiled_buckets_serve_later_calls_without_compiling() -> None:
    model = tiny_llama(VOCAB, seed=8)
    backend = CountingBackend()
    step = CompiledStep(model, backend=backend)
    step.precompile((1, 2))
    step.precompile((3,), hidden=True)
    assert backend.graphs == 3
    assert sorted(step.compile_seconds) == [(1, False), (2, False), (4, True)]
    got = _decode(model, [1, 5, 7, 9], [[4, 5], [9]], step, ends={0: 3})
    assert backend.graphs == 3  # 2 rows, then 1: both compiled already
    assert [r.token_ids for r in got] == [r.token_ids for r in _decode(model, [1, 5, 7, 9], [[4, 5], [9]],
                                                                         ends={0: 3})]


def test_more_rows_than_the_largest_bucket_run_the_eager_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled_step, "ROW_BUCKETS", (1, 2))
    model = tiny_llama(VOCAB, seed=6)
    backend = CountingBackend()
    step = CompiledStep(model, backend=backend)
    suffixes = [[4], [5, 6], [7]]
    got = _decode(model, [1, 2, 3], suffixes, step, ends={0: 4, 1: 6, 2: 2})
    ref = _decode(model, [1, 2, 3], suffixes, ends={0: 4, 1: 6, 2: 2})
    assert [r.token_ids for r in got] == [r.token_ids for r in ref]
    assert sorted(step.compile_seconds) == [(1, False), (2, False)]  # 3 rows: eager; then 2, then 1


def test_reset_forgets_the_graphs_so_new_weights_are_read() -> None:
    model = tiny_llama(VOCAB, seed=7)
    backend = CountingBackend()
    step = CompiledStep(model, backend=backend)
    before = _decode(model, [1, 2, 3], [[4]], step)
    with torch.no_grad():
        model.lm_head.weight.mul_(-1)
    step.reset()
    after = _decode(model, [1, 2, 3], [[4]], step)
    assert [r.token_ids for r in after] == [r.token_ids for r in _decode(model, [1, 2, 3], [[4]])]
    assert after[0].token_ids != before[0].token_ids and backend.graphs == 2


def test_compiled_verify_passes_keep_speculative_output_greedy() -> None:
    """MTP heads plus the lookup branch through compiled verify passes (1-7 rows, padded to
    buckets, logits and hidden state): the same tokens as plain greedy decoding."""
    from hatkit.models.mtp import MTPHeads

    tok = tiny_tokenizer()
    net = tiny_llama(len(tok), seed=2)
    plain = LocalModel(net, tok, "tiny")
    heads = MTPHeads.for_target(net, range(len(tok)), num_heads=3)
    spec = LocalModel(net, tok, "tiny", draft_heads=heads, lookup_branch=2, draft_confidence=0.0,
                      compiled=True)
    spec._compiled.backend = CountingBackend()
    for q in ["price?", "is the red mug in stock in size m?", "hi"]:
        [req] = tiny_requests(plain, [q], max_new_tokens=24)
        assert spec.generate([req])[0].token_ids == plain.generate([req])[0].token_ids, q
    assert spec.stats["spec_steps"] > 0
    assert {hidden for _, hidden in spec._compiled.compile_seconds} == {True}
    assert {rows for rows, _ in spec._compiled.compile_seconds} <= {1, 2, 4, 8}


def test_a_model_of_another_shape_is_refused() -> None:
    model = tiny_llama(VOCAB)
    model.config.model_type = "gpt2"
    with pytest.raises(ValueError, match="Llama-family"):
        CompiledStep(model)


def test_inductor_compiled_decoding_agrees_with_the_eager_decoder() -> None:
    """A real compile (inductor, C++ kernels, weights frozen in; without autotuning to keep the
    test short): the tiny model's greedy tokens equal the eager decoder's for every row, on a
    second cache of another length too (the cache is an input, never a frozen constant)."""
    model = tiny_llama(VOCAB, seed=4)
    step = CompiledStep(model, autotune=False)
    for prefix in ([1, 5, 7, 9, 11, 3, 8], [1, 5, 7, 9, 11, 3, 8, 9, 10, 11, 12, 13, 14]):
        got = _decode(model, prefix, SUFFIXES[:2], step)
        assert [r.token_ids for r in got] == [r.token_ids for r in _decode(model, prefix, SUFFIXES[:2])]
    assert list(step.compile_seconds) == [(2, False)]


def test_inductor_freezes_the_weights_into_packed_products() -> None:
    """Freezing reaches dynamo's tracing (inductor's settings passed as torch.compile `options`
    came too late: the weights stayed graph inputs and every product ran on plain aten::mm)."""
    from torch.profiler import profile

    step = CompiledStep(tiny_llama(VOCAB, seed=4), autotune=False)
    step.precompile((2,))
    with profile() as prof:
        step.precompile((2,))  # compiled already: this call only runs the graph
    ops = {e.key for e in prof.key_averages()}
    assert any("CompiledFxGraph" in op for op in ops)
    assert not ops & {"aten::mm", "aten::addmm", "aten::linear"}, sorted(ops)


def test_compiled_suffix_selects_a_compiled_local_model() -> None:
    assert split_compiled("local@bf16+compiled") == ("local@bf16", True)
    assert split_compiled("runs/x/ckpt+compiled") == ("runs/x/ckpt", True)
    assert split_compiled("local@int8w") == ("local@int8w", False)
    from hatkit.models.select import load_model

    for spec in ("openai:http://127.0.0.1:1/v1#m+compiled", "llamacpp:x.gguf+compiled"):
        with pytest.raises(ValueError, match="local model only"):
            load_model(spec)


def test_a_compiled_local_model_answers_as_the_eager_one() -> None:
    tok = tiny_tokenizer()
    eager = LocalModel(tiny_llama(len(tok), seed=1), tok, "tiny")
    compiled = LocalModel(tiny_llama(len(tok), seed=1), tok, "tiny", compiled=True)
    compiled._compiled.backend = CountingBackend()  # trace only: the padding logic, not C++ codegen
    questions = ["price?", "is the red mug in stock in size m?", "hi"]
    want = eager.generate(tiny_requests(eager, questions, max_new_tokens=8))
    got = compiled.generate(tiny_requests(compiled, questions, max_new_tokens=8))
    assert [o.token_ids for o in got] == [o.token_ids for o in want]
    assert compiled._packing is None and sorted(compiled._compiled.compile_seconds)


def test_precompile_covers_every_batch_size_and_verify_pass_the_model_will_run() -> None:
    from hatkit.models.mtp import MTPHeads

    tok = tiny_tokenizer()
    net = tiny_llama(len(tok), seed=3)
    assert LocalModel(net, tok, "tiny").precompile() == []  # not compiled: nothing to do
    heads = MTPHeads.for_target(net, range(len(tok)), num_heads=3)
    model = LocalModel(net, tok, "tiny", max_batch=5, draft_heads=heads, lookup_branch=2, compiled=True)
    backend = model._compiled.backend = CountingBackend()
    assert model.is_compiled and model.precompile() == [1, 2, 4, 8]
    # verify passes: the pending token + 3 heads + 2 lookup tokens = 6 rows at most
    assert sorted(model._compiled.compile_seconds) == [(1, False), (1, True), (2, False), (2, True),
                                                       (4, False), (4, True), (8, False), (8, True)]
    assert backend.graphs == 8


@pytest.mark.parametrize("precision", ["int8", "int8h"])
def test_int8_weights_are_refused_with_the_precision_that_compiles(precision: str) -> None:
    tok = tiny_tokenizer()
    with pytest.raises(ValueError, match="int8w"):
        LocalModel(tiny_llama(len(tok), seed=1), tok, "tiny", precision=precision, compiled=True)

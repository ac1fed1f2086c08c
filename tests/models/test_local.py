"""LocalModel on a tiny random-weight model: prefix caching and batching change nothing
about greedy outputs; stop strings and log-probs behave."""

from __future__ import annotations

import math

import pytest
import torch

from hatkit.models.base import ChatMessage, ModelOutput, ModelRequest
from hatkit.models.errors import ContextTooLong
from hatkit.models.local import LocalModel
from tiny import tiny_llama, tiny_requests, tiny_tokenizer


def _model(**kwargs: object) -> LocalModel:
    tok = tiny_tokenizer()
    return LocalModel(tiny_llama(len(tok), seed=1), tok, "tiny", **kwargs)  # type: ignore[arg-type]




QUESTIONS = ["price?", "is the red mug in stock in size m?", "hi", "when does it ship to chicago?"]


def test_prefix_cache_and_batching_keep_greedy_outputs_identical() -> None:
    naive = _model(prefix_cache=False, max_batch=1)
    fast = _model(prefix_cache=True, max_batch=8)
    reqs = tiny_requests(naive, QUESTIONS, max_new_tokens=12)
    a = naive.generate(reqs)
    b = fast.generate(reqs)
    assert [o.token_ids for o in a] == [o.token_ids for o in b]
    assert fast.stats["batches"] == 1 and fast.stats["rows"] == 4
    assert naive.stats["batches"] == 4
    fast.generate(reqs)
    assert fast.stats["prefix_misses"] == 1 and fast.stats["prefix_hits"] == 1


def test_logprobs_match_greedy_choice() -> None:
    m = _model()
    out = m.generate(tiny_requests(m, ["price?"], max_new_tokens=6, logprobs=True))[0]
    assert out.logprobs is not None and out.token_ids is not None
    assert len(out.logprobs) == len(out.token_ids) == out.completion_tokens
    assert all(lp <= 0 for lp in out.logprobs)
    # recompute the first token's log-prob with a plain forward pass
    req = tiny_requests(m, ["price?"])[0]
    with torch.no_grad():
        logits = m.model(torch.tensor([list(req.prompt_ids or [])])).logits[0, -1]
    lp = torch.log_softmax(logits, -1)
    assert int(lp.argmax()) == out.token_ids[0]
    assert abs(float(lp.max()) - out.logprobs[0]) < 1e-4


def test_stop_string_cuts_the_row() -> None:
    m = _model()
    free = m.generate(tiny_requests(m, ["hi"], max_new_tokens=20))[0]
    text = m.tok.decode(free.token_ids or [], skip_special_tokens=False)
    assert len(text) >= 3
    stop = text[1:3]  # a string the greedy output is known to produce
    cut = m.generate(tiny_requests(m, ["hi"], max_new_tokens=20, stop=(stop,)))[0]
    assert cut.finish_reason == "stop"
    assert m.tok.decode(cut.token_ids or [], skip_special_tokens=False).endswith(stop)
    assert len(cut.token_ids or []) <= 3


def test_a_prompt_longer_than_the_context_is_a_typed_error_and_the_rest_decode() -> None:
    m = _model()
    long = ModelRequest([ChatMessage("user", "x")], prompt_ids=[5] * m.context_tokens, max_new_tokens=2)
    ok = tiny_requests(m, ["hi"], max_new_tokens=2)[0]
    bad_out, ok_out = m.generate([long, ok])
    assert isinstance(bad_out.error, ContextTooLong) and bad_out.finish_reason == "error"
    assert ok_out.error is None and ok_out.token_ids


def test_a_bug_in_decoding_raises_instead_of_becoming_an_error_output() -> None:
    m = _model()
    bad = ModelRequest([ChatMessage("user", "x")], prompt_ids=[10**6], max_new_tokens=2)
    with pytest.raises(IndexError):  # an id outside the vocabulary: the caller's bug
        m.generate([bad])


def test_a_stream_consumer_that_raises_is_logged_and_dropped(caplog: pytest.LogCaptureFixture) -> None:
    m = _model()
    got: list[str] = []

    def broken(text: str) -> None:
        raise ValueError("client went away")

    reqs = tiny_requests(m, ["hi", "hi"], max_new_tokens=4)
    outs = m.generate(reqs, streams=[broken, got.append])
    assert all(o.error is None for o in outs) and got
    assert m.stats["sink_errors"] == 1
    assert "stream consumer raised" in caplog.text and "client went away" in caplog.text


def test_decoder_matches_transformers_generate() -> None:
    m = _model(max_batch=8)
    reqs = tiny_requests(m, QUESTIONS, max_new_tokens=10)
    ours = m.generate(reqs)
    for req, out in zip(reqs, ours, strict=True):
        prompt = torch.tensor([list(req.prompt_ids or [])])
        with torch.no_grad():
            ref = m.model.generate(prompt, max_new_tokens=10, do_sample=False, pad_token_id=2)
        ref_ids = ref[0, prompt.shape[1]:].tolist()
        if 2 in ref_ids:  # generate pads after the end-of-turn token
            ref_ids = ref_ids[: ref_ids.index(2) + 1]
        assert out.token_ids == ref_ids


def test_sampling_is_seeded_and_logprobs_are_of_the_sampled_tokens() -> None:
    m = _model()
    torch.manual_seed(0)
    a = m.generate(tiny_requests(m, ["hi"], max_new_tokens=8, temperature=1.0, logprobs=True))[0]
    torch.manual_seed(0)
    b = m.generate(tiny_requests(m, ["hi"], max_new_tokens=8, temperature=1.0, logprobs=True))[0]
    assert a.token_ids == b.token_ids and a.logprobs == b.logprobs
    assert a.logprobs is not None and all(lp <= 0 for lp in a.logprobs)


def test_streams_get_each_rows_text_as_it_decodes() -> None:
    m = _model(max_batch=8)
    reqs = tiny_requests(m, QUESTIONS, max_new_tokens=12)
    got: list[list[str]] = [[] for _ in reqs]
    outs = m.generate(reqs, streams=[g.append for g in got])
    assert m.stats["batches"] == 1  # one batch, four sinks
    for out, pieces in zip(outs, got, strict=True):
        ids = [t for t in out.token_ids or [] if t != m.token_format().eos_id]
        assert "".join(pieces) == m.tok.decode(ids, skip_special_tokens=False)
        assert len(pieces) == len(ids)  # one piece per token (the char tokenizer)
    plain = m.generate(reqs)
    assert [o.token_ids for o in plain] == [o.token_ids for o in outs]


def test_a_raising_sink_is_dropped_and_decoding_goes_on() -> None:
    m = _model()
    reqs = tiny_requests(m, ["hi", "price?"], max_new_tokens=8)
    seen: list[str] = []

    def bad(_: str) -> None:
        raise RuntimeError("client went away")

    outs = m.generate(reqs, streams=[bad, seen.append])
    assert all(o.error is None for o in outs)
    assert "".join(seen) == m.tok.decode(
        [t for t in outs[1].token_ids or [] if t != 2], skip_special_tokens=False)


def test_a_batch_reads_one_copy_of_the_shared_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows are packed behind one copy of the cached prefix (issue 18.2): the batch's KV cache
    holds the prefix once plus each row's own tokens, not a prefix copy per row."""
    from transformers.cache_utils import StaticCache

    caches: list[object] = []
    init = StaticCache.__init__

    def spy(self: object, *args: object, **kwargs: object) -> None:  # the class, however imported
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        caches.append(self)

    monkeypatch.setattr(StaticCache, "__init__", spy)
    m = _model(max_batch=8)
    reqs = tiny_requests(m, QUESTIONS, max_new_tokens=6)
    m.generate(reqs)
    [cache] = caches
    keys = cache.layers[0].keys  # type: ignore[attr-defined]
    prefix = reqs[0].prefix_len
    suffixes = sum(len(r.prompt_ids or []) - prefix for r in reqs)
    assert keys.shape[0] == 1 and keys.shape[2] == prefix + suffixes + len(reqs) * 6


def test_rows_that_stop_at_different_steps_decode_as_alone() -> None:
    alone = _model(max_batch=1)
    batched = _model(max_batch=8)
    free = alone.generate(tiny_requests(alone, QUESTIONS, max_new_tokens=20))
    text = alone.tok.decode(free[1].token_ids or [], skip_special_tokens=False)
    reqs = tiny_requests(alone, QUESTIONS, max_new_tokens=20, stop=(text[3:5],))  # ends row 1 early
    a, b = alone.generate(reqs), batched.generate(reqs)
    assert [o.token_ids for o in a] == [o.token_ids for o in b]
    assert a[1].finish_reason == "stop" and len({len(o.token_ids or []) for o in a}) > 1


def test_nucleus_sampling_draws_only_from_the_nucleus_in_proportion() -> None:
    """The nucleus is looked for among the 256 likeliest tokens first (a full sort per step was
    ~40 ms at batch 8); a flat distribution whose nucleus is wider takes the full sort."""
    from hatkit.models.decoding import _choose

    gen = torch.Generator().manual_seed(0)
    logits = torch.full((2, 1000), -30.0)
    logits[:, :4] = torch.tensor([2.0, 1.0, 0.5, -1.0])  # softmax ~ .61 .22 .14 .03
    draws = torch.cat([_choose(logits, 1.0, 0.7, False, gen)[0] for _ in range(1000)])
    share = float((draws == 0).float().mean())
    assert set(draws.tolist()) == {0, 1} and abs(share - 0.61 / 0.83) < 0.05
    flat = torch.zeros((2, 1000))
    picked, lp = _choose(flat, 1.0, 0.5, True, gen)
    assert picked.max() < 1000 and torch.allclose(lp, torch.full((2,), -math.log(1000)))
    free = torch.cat([_choose(logits, 1.0, 1.0, False, gen)[0] for _ in range(1000)])
    assert set(free.tolist()) == {0, 1, 2, 3}


def _next_turn(reqs: list[ModelRequest], outs: list[ModelOutput], m: LocalModel) -> list[ModelRequest]:
    """Each conversation continued: its prompt, the reply and some new tokens (a tool result)."""
    more = m.tok("tool says: 3 left in red", add_special_tokens=False)["input_ids"]
    return [ModelRequest(r.messages, prompt_ids=[*(r.prompt_ids or []), *(o.token_ids or []), *more],
                         prefix_len=r.prefix_len, max_new_tokens=r.max_new_tokens)
            for r, o in zip(reqs, outs, strict=True)]


def test_a_continued_conversation_reuses_its_rows_keys_and_values_with_the_same_output() -> None:
    """The next turn of an episode prefills only its new tokens (the row cache), and decodes
    the tokens a fresh prefill of the whole conversation gives."""
    fresh, cached = _model(row_cache_size=0), _model()
    reqs = tiny_requests(fresh, QUESTIONS, max_new_tokens=10)
    first = fresh.generate(reqs)
    assert [o.token_ids for o in cached.generate(reqs)] == [o.token_ids for o in first]
    assert cached.stats["row_hits"] == 0
    turn2 = _next_turn(reqs, first, fresh)
    a, b = fresh.generate(turn2), cached.generate(turn2)
    assert [o.token_ids for o in a] == [o.token_ids for o in b]
    prefix = reqs[0].prefix_len
    assert cached.stats["row_hits"] == len(reqs)
    reused = [len(r.prompt_ids or []) - prefix + len(o.token_ids or []) - 1
              for r, o in zip(reqs, first, strict=True)]
    assert cached.stats["row_tokens_reused"] == sum(reused)
    assert fresh.stats["row_hits"] == 0


def test_a_repeated_prompt_is_computed_afresh_and_caches_are_cleared() -> None:
    m = _model()
    reqs = tiny_requests(m, QUESTIONS[:2], max_new_tokens=6)
    m.generate(reqs)
    m.generate(reqs)
    assert m.stats["row_hits"] == 0  # the same request twice: no reuse, the same output
    m.clear_caches()
    m.generate(_next_turn(reqs, m.generate(reqs), m))
    assert m.stats["row_hits"] == 2
    m.clear_caches()
    assert not m._rows and not m._cache


def test_a_row_cached_behind_another_prefix_length_is_not_reused() -> None:
    """A row's keys and values start after its own prefix: a continuation of the same tokens
    under a shorter cached prefix must not take them (it would misplace every position)."""
    fresh, cached = _model(row_cache_size=0), _model()
    reqs = tiny_requests(fresh, QUESTIONS[:2], max_new_tokens=6)
    turn2 = [ModelRequest(r.messages, prompt_ids=r.prompt_ids, prefix_len=r.prefix_len - 4,
                          max_new_tokens=r.max_new_tokens)
             for r in _next_turn(reqs, cached.generate(reqs), cached)]
    assert [o.token_ids for o in cached.generate(turn2)] == [o.token_ids for o in fresh.generate(turn2)]
    assert cached.stats["row_hits"] == 0

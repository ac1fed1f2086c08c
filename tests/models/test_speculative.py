"""Prompt-lookup speculative decoding gives plain greedy's tokens; stats; metrics parsing."""

from __future__ import annotations

import pytest

from hatkit.models.base import ChatMessage, ModelRequest
from hatkit.models.local import LocalModel
from hatkit.models.speculative import prompt_lookup_draft, spec_acceptance_from_metrics
from tiny import tiny_llama, tiny_tokenizer


def _model(seed: int = 1, **kwargs: object) -> LocalModel:
    tok = tiny_tokenizer()
    return LocalModel(tiny_llama(len(tok), seed=seed), tok, "tiny", **kwargs)  # type: ignore[arg-type]


def _request(m: LocalModel, system_text: str, question: str, **kw: object) -> ModelRequest:
    fmt = m.token_format()
    system = ChatMessage("system", system_text)
    prefix = fmt.prefix_ids(system, [])
    user = ChatMessage("user", question)
    ids = prefix + fmt.message_ids([system], user, []) + fmt.generation_prompt_ids([system, user], [])
    return ModelRequest([system, user], prompt_ids=ids, prefix_len=len(prefix), **kw)  # type: ignore[arg-type]


CASES = [
    ("you are a shop host. " * 8, "price?"),
    ("you are a shop host. " * 8, "is the red mug in stock in size m?"),
    ("abababababababababababab " * 6, "abababab"),  # repetitive: drafts often right
    ("the quick brown fox jumps over the lazy dog", "zq?"),  # little to copy: drafts often wrong
    ("x", "hi"),
]


def test_draft_copies_what_followed_the_latest_tail_ngram() -> None:
    seq = [1, 2, 3, 4, 5, 9, 2, 3, 7, 8, 2, 3]
    assert prompt_lookup_draft(seq, num_draft=2) == [7, 8]  # most recent "2 3" with a follower
    assert prompt_lookup_draft([5, 6, 7], num_draft=4) == []
    assert prompt_lookup_draft([1, 2, 1], num_draft=3) == [2, 1]
    assert prompt_lookup_draft([1, 2, 3, 1, 2, 3], max_ngram=3, num_draft=8) == [1, 2, 3]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("max_new", [1, 7, 40])
def test_prompt_lookup_equals_plain_greedy(seed: int, max_new: int) -> None:
    plain = _model(seed)
    spec = _model(seed, speculative="prompt_lookup")
    spec.model = plain.model  # same weights
    for system, q in CASES:
        req = _request(plain, system, q, max_new_tokens=max_new)
        a = plain.generate([req])[0]
        b = spec.generate([req])[0]
        assert a.finish_reason == b.finish_reason
        assert a.token_ids == b.token_ids, (system, q)
        assert b.completion_tokens == len(b.token_ids or [])


def test_prompt_lookup_without_prefix_cache_and_with_stop_strings() -> None:
    plain = _model(prefix_cache=False)
    spec = _model(prefix_cache=False, speculative="prompt_lookup")
    spec.model = plain.model
    req = _request(plain, "ab " * 20, "abab", max_new_tokens=30)
    free = plain.generate([req])[0]
    assert spec.generate([req])[0].token_ids == free.token_ids
    text = plain.tok.decode(free.token_ids or [], skip_special_tokens=False)
    stop = text[4:6]
    req2 = _request(plain, "ab " * 20, "abab", max_new_tokens=30, stop=(stop,))
    a, b = plain.generate([req2])[0], spec.generate([req2])[0]
    assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason == "stop"


def test_stats_count_drafts_and_acceptances() -> None:
    spec = _model(speculative="prompt_lookup")
    spec.generate([_request(spec, "ab" * 40, "abab", max_new_tokens=30)])
    s = spec.stats
    assert s["spec_calls"] == 1
    assert 0 <= s["spec_accepted"] <= s["spec_drafted"]
    assert s["spec_drafted"] > 0
    # every token is the prefill's, a verify pass's own, or an accepted draft
    assert s["spec_tokens"] <= 1 + s["spec_steps"] + s["spec_accepted"]
    assert s["spec_acceptance_rate"] == pytest.approx(s["spec_accepted"] / s["spec_drafted"], abs=1e-4)
    # fewer forward passes than tokens whenever anything was accepted
    if s["spec_accepted"]:
        assert s["spec_steps"] + 1 < s["spec_tokens"]


def test_batches_sampling_and_logprobs_use_the_plain_decoder() -> None:
    spec = _model(speculative="prompt_lookup")
    reqs = [_request(spec, "shop. " * 5, q, max_new_tokens=5) for q in ("a", "b")]
    spec.generate(reqs)
    spec.generate([_request(spec, "shop", "a", max_new_tokens=5, temperature=1.0)])
    spec.generate([_request(spec, "shop", "a", max_new_tokens=5, logprobs=True)])
    assert spec.stats["spec_calls"] == 0
    with pytest.raises(ValueError):
        _model(speculative="medusa")


def test_agent_loop_traces_are_identical() -> None:
    from hatkit.agent import Agent
    from hatkit.harness import load_harness

    plain = _model()
    spec = _model(speculative="prompt_lookup")
    spec.model = plain.model
    harness = load_harness("live_commerce")
    object.__setattr__(harness.spec.model, "max_new_tokens", 24)
    questions = ["How much are the wireless earbuds?", "Do you have the linen shirt in M?"]
    ta = [Agent(harness, plain).run(q) for q in questions]
    tb = [Agent(harness, spec).run(q) for q in questions]
    for a, b in zip(ta, tb, strict=True):
        assert a.training_view().input_ids == b.training_view().input_ids
        assert a.final_reply == b.final_reply
    assert spec.stats["spec_calls"] >= len(questions)


VLLM_METRICS = """\
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 1200.0
vllm:spec_decode_num_draft_tokens_total{engine="1",model_name="m"} 800.0
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 900.0
vllm:spec_decode_num_accepted_tokens_total{engine="1",model_name="m"} 660.0
vllm:num_requests_running{model_name="m"} 3.0
"""
SGLANG_METRICS = """\
# TYPE sglang:spec_accept_rate gauge
sglang:spec_accept_rate{model_name="m"} 0.78
sglang:num_running_reqs{model_name="m"} 1.0
"""


def test_acceptance_from_prometheus_metrics() -> None:
    got = spec_acceptance_from_metrics(VLLM_METRICS)
    assert got == {"accepted": 1560.0, "drafted": 2000.0, "acceptance_rate": 0.78}
    assert spec_acceptance_from_metrics(SGLANG_METRICS) == {"acceptance_rate": 0.78}
    assert spec_acceptance_from_metrics("vllm:num_requests_running 1\n") is None

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


# -- assisted decoding with a draft model --

@pytest.mark.parametrize("draft_seed", [1, 5])
def test_draft_model_gives_plain_greedy_ids(draft_seed: int) -> None:
    plain = _model(1)
    tok = plain.tok
    same = draft_seed == 1
    draft = plain.model if same else tiny_llama(len(tok), seed=draft_seed)
    spec = LocalModel(plain.model, tok, "tiny", draft_model=draft, draft_tokenizer=tok,
                      draft_tokens=4)
    assert spec.speculative == "draft"
    for system, q in CASES:
        for max_new in (1, 6, 24):
            req = _request(plain, system, q, max_new_tokens=max_new)
            streamed: list[str] = []
            a, b = plain.generate([req])[0], spec.generate([req], streams=[streamed.append])[0]
            assert a.token_ids == b.token_ids, (draft_seed, system, q, max_new)
            assert a.finish_reason == b.finish_reason
            assert "".join(streamed) == tok.decode([t for t in b.token_ids or [] if t != 2],
                                                   skip_special_tokens=False)
    s = spec.stats
    print(f"draft seed {draft_seed}: acceptance {s['spec_acceptance_rate']:.1%} "
          f"({s['spec_accepted']}/{s['spec_drafted']}), {s['spec_steps']} target passes for "
          f"{s['spec_tokens']} tokens")
    assert s["spec_calls"] == len(CASES) * 3 and s["spec_drafted"] > 0
    if same:  # a draft equal to the target is always right
        assert s["spec_acceptance_rate"] == 1.0 and s["spec_steps"] < s["spec_tokens"]
    else:
        assert s["spec_acceptance_rate"] < 1.0


def test_draft_model_with_stop_strings_and_without_prefix_cache() -> None:
    plain = _model(prefix_cache=False)
    spec = LocalModel(plain.model, plain.tok, "tiny", prefix_cache=False,
                      draft_model=tiny_llama(len(plain.tok), seed=3), draft_tokenizer=plain.tok)
    req = _request(plain, "ab " * 20, "abab", max_new_tokens=30)
    free = plain.generate([req])[0]
    assert spec.generate([req])[0].token_ids == free.token_ids
    text = plain.tok.decode(free.token_ids or [], skip_special_tokens=False)
    req2 = _request(plain, "ab " * 20, "abab", max_new_tokens=30, stop=(text[4:6],))
    a, b = plain.generate([req2])[0], spec.generate([req2])[0]
    assert a.token_ids == b.token_ids and a.finish_reason == b.finish_reason == "stop"


def test_a_draft_with_another_vocabulary_is_refused() -> None:
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from hatkit.models.assisted import DraftMismatch

    plain = _model()
    with pytest.raises(DraftMismatch, match="vocabulary size 50 != target's"):
        LocalModel(plain.model, plain.tok, "tiny", draft_model=tiny_llama(50))
    other = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(
        {"<unk>": 0, "a": 1, "b": 2}, unk_token="<unk>")), unk_token="<unk>")
    with pytest.raises(DraftMismatch, match="draft tokenizer differs"):
        LocalModel(plain.model, plain.tok, "tiny", draft_model=tiny_llama(len(plain.tok)),
                   draft_tokenizer=other)
    with pytest.raises(ValueError, match="needs draft_model"):
        LocalModel(plain.model, plain.tok, "tiny", speculative="draft")
    with pytest.raises(ValueError, match=r"no config\.json"):
        LocalModel(plain.model, plain.tok, "tiny", draft_model="/nonexistent/draft")


def test_draft_model_from_a_checkpoint_folder(tmp_path: object) -> None:
    from pathlib import Path

    plain = _model()
    folder = Path(str(tmp_path)) / "draft"
    tiny_llama(len(plain.tok), seed=4).save_pretrained(folder)
    plain.tok.save_pretrained(folder)
    spec = LocalModel(plain.model, plain.tok, "tiny", draft_model=str(folder))
    req = _request(plain, "you are a shop host. " * 4, "hi", max_new_tokens=10)
    assert spec.generate([req])[0].token_ids == plain.generate([req])[0].token_ids


def test_a_truncated_target_is_a_same_tokenizer_draft() -> None:
    from hatkit.models.assisted import truncated_draft

    plain = _model(2)
    draft = truncated_draft(plain.model, 1)
    assert draft.lm_head is plain.model.lm_head and draft.config.num_hidden_layers == 1
    spec = LocalModel(plain.model, plain.tok, "tiny", draft_model=draft, draft_tokenizer=plain.tok)
    for system, q in CASES[:3]:
        req = _request(plain, system, q, max_new_tokens=16)
        assert spec.generate([req])[0].token_ids == plain.generate([req])[0].token_ids
    assert spec.stats["spec_drafted"] > 0
    with pytest.raises(ValueError, match="between 1 and 1"):
        truncated_draft(plain.model, 2)

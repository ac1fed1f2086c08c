"""Token-by-token SSE: text arrives while the model is still writing, equals the final reply,
never shows tool calls or reasoning, and meets the pre_reply hooks (rewrite, veto, hold)."""

from __future__ import annotations

from typing import Any

from serve_helpers import DripModel, running, sse_chunks

from hatkit.harness import Harness
from hatkit.models.base import ModelRequest
from hatkit.models.errors import BackendUnavailable
from hatkit.models.scripted import ScriptedModel
from hatkit.serve.app import create_app
from hatkit.serve.streaming import ReplyGate, has_reply_hooks

ASK = {"messages": [{"role": "user", "content": "what deals are on EL-001?"}]}
REPLY = ("Great question! EL-001 has a deal today. It ships fast and the battery lasts all "
         "day. Check the pinned link and grab it before the show ends, friends.")


def tool_then(reply: str) -> Any:
    def respond(req: ModelRequest) -> str:
        if not any(m.role == "tool" for m in req.messages):
            return ScriptedModel.call("get_promotions", think="look it up", product_id="EL-001")
        return f"<think>the promo result is in</think>{reply}"
    return respond


def _content(events: list[tuple[float, dict[str, Any]]]) -> list[tuple[float, str]]:
    out = []
    for t, e in events:
        delta = e["choices"][0]["delta"].get("content") if "choices" in e else None
        if delta:
            out.append((t, delta))
    return out


def test_first_chunk_arrives_before_the_turn_ends_and_text_equals_the_reply(lc: Harness) -> None:
    model = DripModel(tool_then(REPLY), delay=0.04)
    app = create_app(lc, model)
    with running(app) as url:
        status, events = sse_chunks(url, ASK)
    assert status == 200
    pieces = _content(events)
    last = events[-1][1]
    assert last["choices"][0]["finish_reason"] == "stop"
    assert last["hatkit"]["stream"] == {"policy": "sentences", "withdrawn": False}
    text = "".join(p for _, p in pieces)
    assert text == REPLY  # the final reply, exactly
    assert last["hatkit"]["tool_calls"] == ["get_promotions"]
    assert "tool_call" not in text and "think" not in text and "promo result" not in text
    turn_end = model.finished_at[-1]
    assert len(pieces) >= 3  # sentence by sentence
    # the first sentence left long before the model finished writing the reply (about 1 s)
    assert pieces[0][0] < turn_end - 0.5, (pieces[0][0], turn_end)
    assert pieces[0][1] == "Great question!"


def test_token_policy_streams_word_by_word(lc: Harness) -> None:
    model = DripModel(tool_then(REPLY), delay=0.03)
    app = create_app(lc, model, stream_policy="tokens")
    with running(app) as url:
        _, events = sse_chunks(url, ASK)
    pieces = _content(events)
    assert "".join(p for _, p in pieces) == REPLY
    assert len(pieces) >= len(REPLY.split()) - 1
    assert pieces[0][0] < model.finished_at[-1] - 0.5


def test_hold_policy_sends_the_reply_after_the_hooks(lc: Harness) -> None:
    model = DripModel(tool_then(REPLY), delay=0.01)
    app = create_app(lc, model, stream_policy="hold")
    with running(app) as url:
        _, events = sse_chunks(url, ASK)
    pieces = _content(events)
    assert [p for _, p in pieces] == [REPLY]
    assert pieces[0][0] >= model.finished_at[-1]


def test_rewrite_hooks_apply_to_streamed_text(lc: Harness) -> None:
    raw = "This blender is the best in the world. Grab one today!"
    app = create_app(lc, DripModel(tool_then(raw), delay=0.01))
    with running(app) as url:
        _, events = sse_chunks(url, ASK)
    text = "".join(p for _, p in _content(events))
    assert "best in the world" not in text
    assert text == "This blender is a popular choice. Grab one today!"
    assert events[-1][1]["choices"][0]["finish_reason"] == "stop"


def test_a_later_veto_withdraws_the_stream_and_no_vetoed_text_is_sent(lc: Harness) -> None:
    attempts = iter(["Our serum is gentle. It cures acne overnight, trust me.",
                     "Our serum is gentle on sensitive skin."])

    def respond(req: ModelRequest) -> str:
        return next(attempts)

    app = create_app(lc, DripModel(respond, delay=0.01))
    with running(app) as url:
        _, events = sse_chunks(url, ASK)
    text = "".join(p for _, p in _content(events))
    assert "cures acne" not in text
    assert text == "Our serum is gentle."  # the clean first sentence of the vetoed attempt
    last = events[-1][1]
    assert last["choices"][0]["finish_reason"] == "content_filter"
    assert last["hatkit"]["stream"]["withdrawn"] is True
    assert last["hatkit"]["reply"] == "Our serum is gentle on sensitive skin."
    assert any(e["kind"] == "hook_veto" for e in last["hatkit"]["events"])


def test_model_error_before_any_text_is_a_503_not_a_stream(lc: Harness) -> None:
    def broken(_: ModelRequest) -> str:
        raise BackendUnavailable("upstream unreachable")

    app = create_app(lc, DripModel(broken))
    with running(app) as url:
        status, events = sse_chunks(url, ASK)
    assert status == 503
    assert events[0][1]["error"]["type"] == "backend_unavailable"
    assert "upstream unreachable" in events[0][1]["error"]["message"]


def test_gate_holds_possible_tool_calls_and_partial_tags(lc: Harness) -> None:
    sent: list[str] = []
    gate = ReplyGate("tokens", lc.enabled_hooks(), lambda: (), sent.append)
    gate.begin_call()
    for piece in ["{", '"name": "check_stock"', "}"]:
        gate.feed(piece)
    assert sent == []  # bare JSON may be a tool call
    gate.begin_call()
    for piece in ["Sure", ", one sec ", "<tool", "_call>", '{"name": "x"}']:
        gate.feed(piece)
    assert "".join(sent) == "Sure, one sec"  # the partial tag was never sent
    gate.finish("Here it is.")
    assert gate.withdrawn
    assert has_reply_hooks(lc.enabled_hooks())
    assert not has_reply_hooks([h for h in lc.enabled_hooks()
                                if getattr(h, "event", "") != "pre_reply"])


def test_local_model_streams_natively_through_the_batcher(lc: Harness) -> None:
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    from hatkit.models.local import LocalModel
    from tiny import tiny_llama, tiny_tokenizer

    tok = tiny_tokenizer()
    model = LocalModel(tiny_llama(len(tok), seed=3), tok, "tiny")
    app = create_app(lc, model, stream_policy="tokens")
    assert app.state.model.native_streaming
    questions = ["hi there", "is it in stock?"]
    with running(app) as url:
        with ThreadPoolExecutor(2) as pool:
            streamed = list(pool.map(lambda q: sse_chunks(url, {
                "messages": [{"role": "user", "content": q}], "max_tokens": 24}), questions))
        plain = [httpx.post(f"{url}/v1/chat/completions", json={
            "messages": [{"role": "user", "content": q}], "max_tokens": 24}, timeout=20).json()
            for q in questions]
    for (status, events), ref in zip(streamed, plain, strict=True):
        assert status == 200
        last = events[-1][1]
        final = ref["choices"][0]["message"]["content"]
        if not last["hatkit"]["stream"]["withdrawn"]:
            assert "".join(p for _, p in _content(events)) == final  # greedy: same reply
        else:
            assert last["hatkit"]["reply"] == final


def test_unknown_stream_policy_is_refused(lc: Harness) -> None:
    import pytest

    with pytest.raises(ValueError, match="stream_policy must be one of"):
        create_app(lc, DripModel(tool_then(REPLY)), stream_policy="sometimes")  # type: ignore[arg-type]


# ---------------------------------------------------------------- the gate agrees with the parser

BARE = '{"name": "get_promotions", "arguments": {"product_id": "EL-001", "note": "a. b"}}'


def test_gate_never_sends_any_part_of_a_bare_tool_call(lc: Harness) -> None:
    """The parser finds bare calls after prose, in a list and in a code fence: the gate must
    hold text from an open brace or fence, not stream the call's JSON until it closes."""
    from hatkit.agent.parsing import parse_output

    for policy in ("tokens", "sentences"):
        for text in [f"Let me check. {BARE}", f"[{BARE}]", f"Sure! One sec.\n```json\n{BARE}\n```"]:
            assert parse_output(text).tool_calls, text
            sent: list[str] = []
            gate = ReplyGate(policy, lc.enabled_hooks(), lambda: (), sent.append)  # type: ignore[arg-type]
            gate.begin_call()
            for i in range(0, len(text), 3):
                gate.feed(text[i:i + 3])
            assert not any(c in "".join(sent) for c in "{[`"), (policy, text, sent)


def test_gate_streams_a_reply_with_closed_braces_and_holds_an_open_one(lc: Harness) -> None:
    sent: list[str] = []
    gate = ReplyGate("tokens", [], lambda: (), sent.append)
    gate.begin_call()
    for piece in ["Price ", "is {price} ", "today. ", "Use { ", "for blocks."]:
        gate.feed(piece)
    assert "".join(sent) == "Price is {price} today. Use"
    gate.finish("Price is {price} today. Use { for blocks.")
    assert "".join(sent) == "Price is {price} today. Use { for blocks." and not gate.withdrawn

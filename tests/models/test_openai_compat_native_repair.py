"""Native tool calls a server garbles: the backend keeps what it cannot read raw, and the
agent's parser repairs it with the same function as text calls (single quotes, trailing
commas, double-encoded arguments), or reports it under the call's id."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from test_openai_compat import TOOLS, FakeServer, Reply, chunk, completion, native_call, req

from hatkit.agent.parsing import parse_native_calls
from hatkit.models.base import ModelOutput, ToolCall
from hatkit.models.openai_compat import OpenAICompatibleModel


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeServer]:
    for var in ("OPENAI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    server = FakeServer()
    server.thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def generate(server: FakeServer, stream: bool) -> ModelOutput:
    model = OpenAICompatibleModel(server.base_url, "qwen-test", stream=stream, timeout_s=5,
                                  sleep=lambda s: None)
    try:
        [out] = model.generate([req(tools=TOOLS)])
    finally:
        model.close()
    return out


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("raw", "repair"), [
    pytest.param("{'sku': 'A1'}", "single_quotes", id="single_quotes"),
    pytest.param('{"sku": "A1",}', "trailing_comma", id="trailing_comma"),
    pytest.param(json.dumps('{"sku": "A1"}'), "arguments_string", id="double_encoded"),
])
def test_garbled_native_arguments_get_the_text_paths_repairs(fake: FakeServer, stream: bool,
                                                             raw: str, repair: str) -> None:
    if stream:
        fake.script(Reply(sse=[
            chunk({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "get_price",
                                                                        "arguments": raw[:4]}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": raw[4:]}}]}),
            chunk({}, "tool_calls"),
        ]))
    else:
        fake.script(Reply(body=completion(None, [native_call("c1", "get_price", raw)], "tool_calls")))
    good, bad, repairs = parse_native_calls(generate(fake, stream).tool_calls)
    assert (good, bad) == ([ToolCall("get_price", {"sku": "A1"}, "c1")], [])
    assert repair in [r.kind for r in repairs]


def test_native_call_without_a_name_is_reported_not_run(fake: FakeServer) -> None:
    fake.script(Reply(body=completion(None, [{"id": "c1", "type": "function",
                                              "function": {"arguments": "{}"}}], "tool_calls")))
    good, bad, _ = parse_native_calls(generate(fake, stream=False).tool_calls)
    assert good == [] and [(b.id, b.reason) for b in bad] == [("c1", "tool call has no 'name'")]

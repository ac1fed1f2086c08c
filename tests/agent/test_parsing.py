"""parse_output: think / tool calls / reply, the repairs it makes, and the spans it labels."""

from __future__ import annotations

import ast
import json
import random
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

from hatkit.agent import Agent
from hatkit.agent import parsing as parsing_module
from hatkit.agent.parsing import BadCall, ParsedOutput, parse_native_calls, parse_output
from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import Harness
from hatkit.models.base import ModelOutput, ToolCall
from hatkit.models.scripted import ScriptedModel

GOOD = '{"name": "get_promotions", "arguments": {"product_id": "EL-001"}}'


def kinds(out: ParsedOutput) -> list[str]:
    return [r.kind for r in out.repairs]


def only_call(out: ParsedOutput) -> tuple[str, dict[str, object]]:
    assert not out.bad_calls, out.bad_calls
    assert len(out.tool_calls) == 1, out.tool_calls
    call = out.tool_calls[0]
    return call.name, dict(call.arguments)


def only_bad(out: ParsedOutput) -> BadCall:
    assert not out.tool_calls, out.tool_calls
    assert len(out.bad_calls) == 1, out.bad_calls
    return out.bad_calls[0]


def assert_spans_tile(out: ParsedOutput) -> None:
    """Spans are in order, non-empty, and cover the text exactly: no gap, no overlap."""
    pos = 0
    for seg, start, end in out.spans:
        assert seg in ("think_tool", "think_reply", "tool_call", "reply"), seg
        assert start == pos, (out.text, out.spans)
        assert end > start, (out.text, out.spans)
        pos = end
    assert pos == len(out.text), (out.text, out.spans)


# ---------------------------------------------------------------- well-formed input

def test_well_formed_call_needs_no_repair() -> None:
    out = parse_output(f"<tool_call>\n{GOOD}\n</tool_call>")
    assert only_call(out) == ("get_promotions", {"product_id": "EL-001"})
    assert out.repairs == []
    assert out.wants_tools
    assert out.reply == ""
    assert out.tool_calls[0].id == "call_0"


def test_call_prefix_names_the_ids() -> None:
    out = parse_output(f"<tool_call>{GOOD}</tool_call>", call_prefix="call_3")
    assert out.tool_calls[0].id == "call_3_0"


def test_parameters_key_is_accepted_as_arguments() -> None:
    out = parse_output('<tool_call>{"name": "lookup", "parameters": {"item": "mug"}}</tool_call>')
    assert only_call(out) == ("lookup", {"item": "mug"})


def test_plain_reply_is_not_a_tool_call() -> None:
    out = parse_output("Hi! The scarf ships in 2 days.")
    assert not out.wants_tools
    assert out.reply == "Hi! The scarf ships in 2 days."
    assert out.spans == [("reply", 0, len(out.text))]


# ---------------------------------------------------------------- repairs

@pytest.mark.parametrize(("text", "repair", "expected"), [
    pytest.param(f"<tool_call>\n{GOOD}", "missing_close_tag",
                 ("get_promotions", {"product_id": "EL-001"}), id="missing_close_tag"),
    pytest.param(f"Let me check. {GOOD}", "bare_json",
                 ("get_promotions", {"product_id": "EL-001"}), id="bare_json"),
    pytest.param("<tool_call>{'name': 'check_stock', 'arguments': {'product_id': 'AP-001', "
                 "'size': 'M'}}</tool_call>", "single_quotes",
                 ("check_stock", {"product_id": "AP-001", "size": "M"}), id="single_quotes"),
    pytest.param('<tool_call>{"name": "check_stock", "arguments": {"product_id": "AP-001",},}'
                 "</tool_call>", "trailing_comma",
                 ("check_stock", {"product_id": "AP-001"}), id="trailing_comma"),
    pytest.param('<tool_call>{"name": "get_promotions", "arguments": "{\\"product_id\\": '
                 '\\"EL-001\\"}"}</tool_call>', "arguments_string",
                 ("get_promotions", {"product_id": "EL-001"}), id="arguments_string"),
    pytest.param('<tool_call>{"name": "escalate_to_human", "arguments": ""}</tool_call>',
                 "arguments_string", ("escalate_to_human", {}), id="arguments_empty_string"),
    pytest.param('<tool_call>{"name": "search_products"}</tool_call>', "missing_arguments",
                 ("search_products", {}), id="missing_arguments"),
    pytest.param(f"<tool_call>{GOOD} and then some</tool_call>", "trailing_text",
                 ("get_promotions", {"product_id": "EL-001"}), id="trailing_text"),
])
def test_repair_gives_the_right_call_and_records_its_kind(
        text: str, repair: str, expected: tuple[str, dict[str, object]]) -> None:
    out = parse_output(text)
    assert only_call(out) == expected
    assert repair in kinds(out)


def test_unclosed_think_is_repaired_and_kept_as_reasoning() -> None:
    out = parse_output("<think>the viewer wants a price")
    assert kinds(out) == ["unclosed_think"]
    assert out.think == "the viewer wants a price"
    assert not out.wants_tools
    assert out.spans == [("think_reply", 0, len(out.text))]
    assert out.reply == ""


def test_unclosed_think_does_not_record_other_repairs() -> None:
    out = parse_output("<think>hmm</think>Hello there")
    assert out.repairs == []
    assert out.reply == "Hello there"


def test_code_fenced_json_inside_tags_is_unwrapped() -> None:
    out = parse_output(f"<tool_call>\n```json\n{GOOD}\n```\n</tool_call>")
    assert only_call(out) == ("get_promotions", {"product_id": "EL-001"})


def test_code_fenced_json_without_language_is_unwrapped() -> None:
    out = parse_output(f"<tool_call>```{GOOD}```</tool_call>")
    assert only_call(out) == ("get_promotions", {"product_id": "EL-001"})


def test_code_fenced_json_records_a_repair() -> None:
    out = parse_output(f"<tool_call>\n```json\n{GOOD}\n```\n</tool_call>")
    assert out.repairs, "unwrapping a code fence is a repair and should be recorded"


def test_code_fenced_bare_json_is_found() -> None:
    out = parse_output(f"Checking:\n```json\n{GOOD}\n```")
    assert only_call(out) == ("get_promotions", {"product_id": "EL-001"})
    assert "bare_json" in kinds(out)


def test_several_repairs_on_one_call_are_all_recorded() -> None:
    out = parse_output("<tool_call>{'name': 'lookup', 'arguments': {'item': 'mug',},}")
    assert only_call(out) == ("lookup", {"item": "mug"})
    assert {"missing_close_tag", "trailing_comma", "single_quotes"} <= set(kinds(out))


def test_single_quoted_literals_true_false_null_become_python_values() -> None:
    out = parse_output("<tool_call>{'name': 'x', 'arguments': {'a': true, 'b': false, "
                       "'c': null}}</tool_call>")
    assert only_call(out) == ("x", {"a": True, "b": False, "c": None})


def test_single_quote_repair_keeps_string_values_intact() -> None:
    out = parse_output("<tool_call>{'name': 'search_products', 'arguments': "
                       "{'query': 'null and void, true story'}}</tool_call>")
    assert only_call(out) == ("search_products", {"query": "null and void, true story"})


def test_trailing_comma_repair_does_not_edit_string_values() -> None:
    out = parse_output("<tool_call>{'name': 'search_products', 'arguments': "
                       "{'query': 'a,}'}}</tool_call>")
    assert only_call(out) == ("search_products", {"query": "a,}"})
    assert "trailing_comma" not in kinds(out)


# ---------------------------------------------------------------- unrepairable calls

@pytest.mark.parametrize(("body", "reason"), [
    pytest.param("this is not json at all", "not a JSON object", id="not_json"),
    pytest.param('{"arguments": {"product_id": "EL-001"}}', "no 'name'", id="no_name"),
    pytest.param('{"name": "   ", "arguments": {}}', "no 'name'", id="blank_name"),
    pytest.param('{"name": 7, "arguments": {}}', "no 'name'", id="name_not_string"),
    pytest.param('{"name": "get_promotions", "arguments": ["EL-001"]}', "'arguments' is not "
                 "an object", id="arguments_list"),
    pytest.param('{"name": "get_promotions", "arguments": 3}', "'arguments' is not an object",
                 id="arguments_number"),
    pytest.param('{"name": "get_promotions", "arguments": "product_id=EL-001"}',
                 "string that is not JSON", id="arguments_string_not_json"),
    pytest.param('{"name": "get_promotions", "arguments": "[1, 2]"}',
                 "'arguments' is not an object", id="arguments_string_list"),
    pytest.param("", "empty tool call", id="empty"),
    pytest.param("   \n ", "empty tool call", id="whitespace"),
    pytest.param("{[1]: 2}", "not a JSON object", id="unhashable_key"),
])
def test_unrepairable_call_becomes_bad_call_with_reason(body: str, reason: str) -> None:
    out = parse_output(f"<tool_call>{body}</tool_call>")
    bad = only_bad(out)
    assert reason in bad.reason
    assert bad.raw == body.strip()
    assert out.wants_tools
    assert out.reply == ""
    assert out.spans == [("tool_call", 0, len(out.text))]


def test_bad_call_raw_is_capped() -> None:
    body = "x" * 2000
    assert len(only_bad(parse_output(f"<tool_call>{body}</tool_call>")).raw) == 500


# ---------------------------------------------------------------- several calls

def test_several_calls_in_one_message_get_distinct_ids_in_order() -> None:
    text = "".join(
        f'<tool_call>{{"name": "check_stock", "arguments": {{"product_id": "AP-00{i}"}}}}'
        "</tool_call>\n" for i in range(1, 4))
    out = parse_output(text, call_prefix="call_2")
    assert [c.arguments["product_id"] for c in out.tool_calls] == ["AP-001", "AP-002", "AP-003"]
    assert [c.id for c in out.tool_calls] == ["call_2_0", "call_2_1", "call_2_2"]
    assert [s[0] for s in out.spans] == ["tool_call", "think_tool"] * 3


def test_good_and_bad_calls_in_one_message_are_both_kept() -> None:
    out = parse_output(f"<tool_call>nope</tool_call><tool_call>{GOOD}</tool_call>")
    assert [c.name for c in out.tool_calls] == ["get_promotions"]
    assert [b.raw for b in out.bad_calls] == ["nope"]
    assert len({c.id for c in out.tool_calls}) == len(out.tool_calls)


def test_bare_json_is_not_looked_for_when_tags_are_present() -> None:
    out = parse_output(f"<tool_call>{GOOD}</tool_call> also {GOOD}")
    assert len(out.tool_calls) == 1
    assert "bare_json" not in kinds(out)


# ---------------------------------------------------------------- segments and spans

def test_think_before_a_tool_call_is_think_tool() -> None:
    text = f"<think>need promotions</think>\n<tool_call>{GOOD}</tool_call>"
    out = parse_output(text)
    assert out.think == "need promotions"
    think_end = text.index("</think>") + len("</think>")
    call_start = text.index("<tool_call>")
    assert out.spans == [("think_tool", 0, think_end), ("think_tool", think_end, call_start),
                         ("tool_call", call_start, len(text))]
    assert out.segment_at(0) == "think_tool"
    assert out.segment_at(call_start) == "tool_call"


def test_think_before_a_reply_is_think_reply() -> None:
    text = "<think>just greet</think>Hello! Welcome to the stream."
    out = parse_output(text)
    end = text.index("</think>") + len("</think>")
    assert out.spans == [("think_reply", 0, end), ("reply", end, len(text))]
    assert out.reply == "Hello! Welcome to the stream."
    assert out.think == "just greet"


def test_text_before_a_bare_call_is_think_tool() -> None:
    text = f"I will look it up: {GOOD}"
    out = parse_output(text)
    start = text.index("{")
    assert out.spans == [("think_tool", 0, start), ("tool_call", start, len(text))]


def test_segment_at_past_the_end_is_the_last_segment() -> None:
    out = parse_output("<think>a</think>bye")
    assert out.segment_at(10_000) == "reply"
    assert parse_output("").segment_at(0) == "reply"


TRICKY = [
    "",
    " ",
    "Hello!",
    "<think></think>",
    "<think>x</think>",
    "<think>unclosed",
    "<think>a</think><think>b</think>reply",
    "<tool_call>",
    "</tool_call>",
    "<tool_call></tool_call>",
    f"<tool_call>{GOOD}",
    f"<tool_call>{GOOD}</tool_call>",
    f"<tool_call>{GOOD}</tool_call>trailing words",
    f"lead <tool_call>{GOOD}</tool_call> mid <tool_call>{GOOD}</tool_call> tail",
    f"<think>t</think><tool_call>{GOOD}</tool_call>",
    f"<think>t <tool_call>{GOOD}</tool_call></think> reply",
    f"<think>open <tool_call>{GOOD}</tool_call>",
    f"bare {GOOD} after",
    "{price} is {{ host_name }}",
    '{"name": "x"}',
    '{"arguments": {}}',
    "{'name': 'x', 'arguments': {}}",
    "{ unbalanced",
    "}}}{{{",
    "<tool_call>{'name': 'x', 'arguments': {'a': 'b',},}",
    "```json\n" + GOOD + "\n```",
    "<tool_call>\n```json\n" + GOOD + "\n```\n</tool_call>",
    "</think>stray close",
    "<tool_call>nope</tool_call><tool_call>" + GOOD + "</tool_call>",
    "text\n\n",
    "<think>a\n",
    "<tool_call>{}\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_spans_cover_text_without_gaps_or_overlap(text: str) -> None:
    assert_spans_tile(parse_output(text))


def random_texts(pieces: list[str], seed: int, n: int = 300) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))) for _ in range(n)]


THINK_PIECES = ["<think>why</think>", "hi ", "\n", "</think>"]
CALL_PIECES = ["</think>", "<tool_call>", "</tool_call>", GOOD, "{", "}", '"', "'", "hi ", "\n",
               "{price}", '{"name": "a", "arguments": {}}', ",", ":"]


def test_spans_tile_random_mixtures_of_pieces() -> None:
    """Reasoning first, then anything but an opening <think>."""
    heads = random_texts(THINK_PIECES, seed=1)
    tails = random_texts(CALL_PIECES, seed=2)
    for head, tail in zip(heads, tails, strict=True):
        assert_spans_tile(parse_output(head + tail))


def test_spans_tile_random_mixtures_with_open_think_tags() -> None:
    for text in random_texts([*THINK_PIECES, *CALL_PIECES, "<think>"], seed=1234):
        assert_spans_tile(parse_output(text))


def test_think_tag_inside_call_arguments_does_not_overlap_spans() -> None:
    text = '<tool_call>{"name": "search_products", "arguments": {"query": "<think>"}}</tool_call>'
    out = parse_output(text)
    assert only_call(out) == ("search_products", {"query": "<think>"})
    assert_spans_tile(out)
    assert out.think == ""
    assert "unclosed_think" not in kinds(out)


# ---------------------------------------------------------------- not tool calls

@pytest.mark.parametrize("text", [
    "The price is {price} today!",
    "Use {{ host_name }} as a template",
    '{"product": "scarf", "price": 20}',
    '{"name": "Mia"}',
    '{"arguments": {"a": 1}}',
    "Set {a, b} and dict {'k': 1}",
    "{",
    "}",
])
def test_replies_with_braces_are_not_tool_calls(text: str) -> None:
    out = parse_output(text)
    assert not out.wants_tools
    assert out.repairs == []
    assert out.reply == text.strip()
    assert out.spans == [("reply", 0, len(text))]


def test_reply_has_stray_tags_stripped() -> None:
    out = parse_output("</think>Hi</tool_call> there")
    assert not out.wants_tools
    assert out.reply == "Hi there"


# ---------------------------------------------------------------- robustness

def test_parse_output_never_raises_on_random_garbage() -> None:
    alphabet = [*"<>{}\"':,/ abc\n[]\\", "tool_call", "think", "name", "arguments", "true",
                "null", "```"]
    rng = random.Random(20240601)
    for _ in range(400):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        out = parse_output(text)
        assert out.text == text
        assert_spans_tile(out)
        for call in out.tool_calls:
            assert isinstance(call.name, str) and call.name
            assert isinstance(call.arguments, dict)
            json.dumps(dict(call.arguments), default=str)
        for bad in out.bad_calls:
            assert bad.reason


def test_parse_output_survives_deep_braces() -> None:
    for text in ["<tool_call>" + "{" * 5000 + "</tool_call>", "{" * 3000 + "}" * 3000]:
        assert parse_output(text).text == text


@pytest.mark.parametrize("body", [
    pytest.param("[" * 5000 + "]" * 5000, id="nested_arrays"),
    pytest.param('{"name": "x", "arguments": {"a": ' + "[" * 5000 + "]" * 5000 + "}}",
                 id="nested_argument"),
])
def test_parse_output_survives_deeply_nested_json(body: str) -> None:
    out = parse_output(f"<tool_call>{body}</tool_call>")
    assert out.wants_tools


# ---------------------------------------------------------------- several calls in one block

STOCK = '{"name": "check_stock", "arguments": {"product_id": "AP-001"}}'
BOTH = [("get_promotions", {"product_id": "EL-001"}), ("check_stock", {"product_id": "AP-001"})]


def calls(out: ParsedOutput) -> list[tuple[str, dict[str, object]]]:
    assert not out.bad_calls, out.bad_calls
    return [(c.name, dict(c.arguments)) for c in out.tool_calls]


@pytest.mark.parametrize("body", [
    pytest.param(f"{GOOD}{STOCK}", id="back_to_back"),
    pytest.param(f"{GOOD}\n{STOCK}", id="newline"),
    pytest.param(f"{GOOD},\n{STOCK}", id="comma"),
    pytest.param(f"[{GOOD}, {STOCK}]", id="json_list"),
    pytest.param(f"[{GOOD}, {STOCK},]", id="json_list_trailing_comma"),
    pytest.param(f"```json\n[{GOOD}, {STOCK}]\n```", id="fenced_list"),
    pytest.param(GOOD.replace('"', "'") + "\n" + STOCK.replace('"', "'"), id="single_quoted_pair"),
])
def test_several_calls_in_one_block_are_all_parsed_in_order(body: str) -> None:
    out = parse_output(f"<tool_call>\n{body}\n</tool_call>", call_prefix="call_1")
    assert calls(out) == BOTH
    assert [c.id for c in out.tool_calls] == ["call_1_0", "call_1_1"]
    assert "several_calls" in kinds(out)
    assert out.spans == [("tool_call", 0, len(out.text))]


def test_comma_separated_calls_record_no_quote_repair() -> None:
    assert kinds(parse_output(f"<tool_call>{GOOD}, {STOCK}</tool_call>")) == ["several_calls"]


def test_ids_count_calls_across_blocks() -> None:
    out = parse_output(f"<tool_call>{GOOD}{STOCK}</tool_call>\n<tool_call>{GOOD}</tool_call>")
    assert [c.id for c in out.tool_calls] == ["call_0", "call_1", "call_2"]
    assert [c.name for c in out.tool_calls] == ["get_promotions", "check_stock", "get_promotions"]


def test_a_bad_call_next_to_a_good_one_in_a_block_is_reported() -> None:
    out = parse_output(f'<tool_call>{GOOD}\n{{"arguments": {{}}}}</tool_call>')
    assert [c.name for c in out.tool_calls] == ["get_promotions"]
    assert [b.reason for b in out.bad_calls] == ["tool call has no 'name'"]
    assert [b.id for b in out.bad_calls] == ["bad_call_1"]


def test_a_list_that_is_not_a_list_of_calls_reports_each_element() -> None:
    out = parse_output('<tool_call>["get_promotions", {"product_id": "EL-001"}]</tool_call>')
    assert not out.tool_calls
    assert [b.reason for b in out.bad_calls] == ["tool call is not a JSON object",
                                                 "tool call has no 'name'"]
    assert [b.raw for b in out.bad_calls] == ['"get_promotions"', '{"product_id": "EL-001"}']


def test_an_empty_list_is_a_bad_call() -> None:
    assert "empty" in only_bad(parse_output("<tool_call>[]</tool_call>")).reason


def test_text_around_several_calls_is_a_recorded_repair() -> None:
    out = parse_output(f"<tool_call>first {GOOD} then {STOCK} done</tool_call>")
    assert calls(out) == BOTH
    assert "trailing_text" in kinds(out)


def test_a_cut_off_call_after_a_good_one_is_reported_not_dropped() -> None:
    out = parse_output(f'<tool_call>{GOOD}\n{{"name": "check_stock", "arguments": {{"product_id": '
                       '"AP-001"}</tool_call>')
    assert [(c.name, dict(c.arguments)) for c in out.tool_calls] == [BOTH[0]]
    [bad] = out.bad_calls
    assert "never closed" in bad.reason and bad.raw.startswith('{"name": "check_stock"')


def test_a_call_missing_its_last_brace_is_one_bad_call_not_its_inner_object() -> None:
    bad = only_bad(parse_output('<tool_call>{"name": "x", "arguments": {"a": 1}</tool_call>'))
    assert "not a JSON object" in bad.reason and bad.raw.startswith('{"name": "x"')


def test_several_bare_calls_are_all_found() -> None:
    text = f"Checking both: {GOOD} and {STOCK}"
    out = parse_output(text)
    assert calls(out) == BOTH
    assert [s[0] for s in out.spans] == ["think_tool", "tool_call", "think_tool", "tool_call"]
    assert_spans_tile(out)


def test_bare_call_after_an_unclosed_prose_brace_with_an_apostrophe_is_found() -> None:
    out = parse_output(f"Oops {{ I'm checking {GOOD}")
    assert calls(out) == [BOTH[0]]


def test_several_calls_in_one_block_all_run_in_order_through_the_loop(lc: Harness) -> None:
    model = ScriptedModel([f"<tool_call>\n[{GOOD}, {STOCK}]\n</tool_call>", "Both checked!"])
    trace = Agent(lc, model, state_factory=ShopState).run("deals and stock?")
    assert [(r.name, r.error_type) for r in trace.tool_calls] == [
        ("get_promotions", None), ("check_stock", None)]
    fed = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [(m.name, m.tool_call_id) for m in fed] == [("get_promotions", "call_0_0"),
                                                      ("check_stock", "call_0_1")]
    assert trace.final_reply == "Both checked!"


def test_a_list_whose_close_tag_the_server_stripped_needs_no_repair(lc: Harness) -> None:
    """finish_reason 'stop' after a list means the server ate '</tool_call>', as after '}'."""
    out = ModelOutput(f"<tool_call>\n[{GOOD}, {STOCK}]", finish_reason="stop")
    trace = Agent(lc, ScriptedModel([out, "Both checked!"]), state_factory=ShopState).run("deals?")
    assert [e.data["repair"] for e in trace.events_of("repair")] == ["several_calls"]
    assert [r.error_type for r in trace.tool_calls] == [None, None]


def test_a_malformed_call_in_a_block_is_answered_with_an_error(lc: Harness) -> None:
    model = ScriptedModel([f'<tool_call>{GOOD}\n{{"arguments": {{}}}}</tool_call>', "Done!"])
    trace = Agent(lc, model, state_factory=ShopState).run("deals?")
    assert sorted((r.name, r.error_type) for r in trace.tool_calls) == [
        ("?", "malformed_call"), ("get_promotions", None)]
    fed = [m.content for m in model.requests[1].messages if m.role == "tool"]
    assert any("no 'name'" in c for c in fed)


# ---------------------------------------------------------------- native calls: the same repairs

RAW = "__raw__"


@pytest.mark.parametrize(("arguments", "repair"), [
    pytest.param("{'product_id': 'EL-001'}", "single_quotes", id="single_quotes"),
    pytest.param('{"product_id": "EL-001",}', "trailing_comma", id="trailing_comma"),
    pytest.param(json.dumps('{"product_id": "EL-001"}'), "arguments_string", id="double_encoded"),
])
def test_native_arguments_get_the_text_paths_repairs(arguments: str, repair: str) -> None:
    good, bad, repairs = parse_native_calls([ToolCall("get_promotions", {RAW: arguments}, "srv_1")])
    assert not bad
    assert good == [ToolCall("get_promotions", {"product_id": "EL-001"}, "srv_1")]
    assert repair in [r.kind for r in repairs]
    text = parse_output(f'<tool_call>{{"name": "get_promotions", "arguments": {arguments}}}</tool_call>')
    assert only_call(text) == ("get_promotions", {"product_id": "EL-001"})


def test_native_clean_arguments_need_no_repair() -> None:
    good, bad, repairs = parse_native_calls([ToolCall("a", {"x": 1}, "c1"), ToolCall("b", {}, "")],
                                            call_prefix="call_4")
    assert (good, bad, repairs) == ([ToolCall("a", {"x": 1}, "c1"), ToolCall("b", {}, "call_4_1")],
                                    [], [])


@pytest.mark.parametrize(("call", "reason"), [
    pytest.param(ToolCall("get_promotions", {RAW: "{product_id: EL-001"}, "s"), "not JSON", id="garbage"),
    pytest.param(ToolCall("get_promotions", {RAW: "[1, 2]"}, "s"), "not an object", id="list"),
    pytest.param(ToolCall("get_promotions", {RAW: 7}, "s"), "not an object", id="number"),
    pytest.param(ToolCall("", {}, "s"), "no 'name'", id="no_name"),
    pytest.param(ToolCall("  ", {}, "s"), "no 'name'", id="blank_name"),
])
def test_native_calls_beyond_repair_are_bad_calls_under_their_id(call: ToolCall, reason: str) -> None:
    good, bad, _ = parse_native_calls([call])
    assert not good
    assert len(bad) == 1 and reason in bad[0].reason and bad[0].id == "s"


def test_native_single_quoted_arguments_run_through_the_loop(lc: Harness) -> None:
    out = ModelOutput("", tool_calls=[ToolCall("get_promotions", {RAW: "{'product_id': 'EL-001',}"},
                                               "srv_3")], finish_reason="tool_calls")
    model = ScriptedModel([out, "Deals found!"], native_tools=True)
    trace = Agent(lc, model, state_factory=ShopState).run("deals?")
    assert [(r.name, r.arguments, r.error_type) for r in trace.tool_calls] == [
        ("get_promotions", {"product_id": "EL-001"}, None)]
    assert {"single_quotes", "trailing_comma"} <= {e.data["repair"] for e in trace.events_of("repair")}
    assert [m.tool_call_id for m in model.requests[1].messages if m.role == "tool"] == ["srv_3"]


# ---------------------------------------------------------------- linear time, by counting work

class TooMuchWork(Exception):
    pass


@contextmanager
def counting_work(budget: int) -> Iterator[dict[str, int]]:
    """Counts lines run in parsing.py and characters handed to a decoder (json, ast); raises
    TooMuchWork once the lines pass `budget`, so a quadratic parser fails fast."""
    work = {"lines": 0, "decoded": 0}
    source = parsing_module.__file__

    def local(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        if event == "line":
            work["lines"] += 1
            if work["lines"] > budget:
                raise TooMuchWork(f"{work['lines']} lines")
        return local

    def global_(frame: FrameType, event: str, arg: Any) -> Callable[..., Any] | None:
        return local if frame.f_code.co_filename == source else None

    def counted(fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(text: Any, *args: Any, **kwargs: Any) -> Any:
            work["decoded"] += len(text) if isinstance(text, str) else 0
            return fn(text, *args, **kwargs)
        return wrapper

    patch = pytest.MonkeyPatch()
    patch.setattr(json, "loads", counted(json.loads))
    patch.setattr(ast, "literal_eval", counted(ast.literal_eval))
    sys.settrace(global_)
    try:
        yield work
    finally:
        sys.settrace(None)
        patch.undo()


ADVERSARIAL: dict[str, Callable[[int], str]] = {
    "open_braces": lambda n: "{" * n,
    "open_braces_in_a_call": lambda n: "<tool_call>" + "{" * n + "</tool_call>",
    "open_brackets_in_a_call": lambda n: "<tool_call>" + "[" * n + "</tool_call>",
    "brace_quote": lambda n: "{'" * (n // 2),
    "brace_escaped_quote": lambda n: "{" + "\\'" * (n // 2),
    "open_keys": lambda n: '{"a": ' * (n // 6),
    "quote_escaped_quotes_in_a_call": lambda n: '<tool_call>{"' + '\\"' * (n // 2) + "</tool_call>",
    "empty_objects": lambda n: "{}" * (n // 2),
    "many_bare_calls": lambda n: '{"name": "x", "arguments": {}} ' * (n // 32),
    "many_blocks": lambda n: f"<tool_call>{GOOD}</tool_call>" * (n // 90),
    "many_calls_in_a_block": lambda n: "<tool_call>" + GOOD * (n // 64) + "</tool_call>",
    "many_repaired_calls_in_a_block": lambda n: "<tool_call>" + "{'name': 'x', 'arguments': {},}" * (n // 31)
    + "</tool_call>",
    "think_blocks": lambda n: "<think>a</think>" * (n // 16),
    "open_tags": lambda n: "<tool_call>" * (n // 11),
}


@pytest.mark.parametrize("make", list(ADVERSARIAL.values()), ids=list(ADVERSARIAL))
def test_parsing_work_grows_linearly_with_the_text(make: Callable[[int], str]) -> None:
    """At 16k characters a quadratic parser does ~16,000x more work per character than at 1;
    here the work per character must stay under a small constant."""
    n = 16_000
    text = make(n)
    with counting_work(budget=40 * n) as work:
        out = parse_output(text)
        for pos in range(0, len(text), 4):  # the loop labels every token by its segment
            out.segment_at(pos)
    assert work["lines"] <= 40 * n, work
    assert work["decoded"] <= 8 * n, work  # a few decode passes, not one per candidate

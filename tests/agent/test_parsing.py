"""parse_output: think / tool calls / reply, the repairs it makes, and the spans it labels."""

from __future__ import annotations

import json
import random

import pytest

from hatkit.agent.parsing import BadCall, ParsedOutput, parse_output

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
    pytest.param('["get_promotions", {"product_id": "EL-001"}]', "not a JSON object",
                 id="json_array"),
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

"""Loading and rendering: the reference harness and the minimal fixture."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from hatkit.harness import HarnessError, ToolContext, load_harness
from hatkit.harness.hooks import ForbiddenPhrases, MaxReplyLength, ToolPermission


def test_reference_harness_meets_the_domain_brief() -> None:
    h = load_harness("live_commerce")
    assert h.name == "live_commerce"
    assert len(h.spec.enabled.skills) >= 6
    assert len(h.spec.enabled.tools) >= 8
    assert {"en", "zh"} <= set(h.spec.locales)
    assert h.tools["apply_coupon"].kind == "write"
    assert h.tools["apply_coupon"].permission == "coupon.apply"
    kinds = {type(r).__name__ for r in h.enabled_hooks()}
    assert {"ForbiddenPhrases", "ToolPermission", "ClaimRequiresTool", "MaxReplyLength"} <= kinds


def test_reachable_by_name_and_by_repo_path() -> None:
    by_name = load_harness("live_commerce")
    by_path = load_harness(Path(__file__).parents[2] / "harnesses" / "live_commerce")
    assert by_name.content_hash == by_path.content_hash


def test_render_substitutes_rule_values_everywhere(full_render_harness: Path) -> None:
    r = load_harness(full_render_harness).render()
    assert "$99 or more" in r.system_prompt           # system prompt
    assert "exceed 30% off" in r.system_prompt        # a skill body
    assert "{{" not in r.system_prompt and "{%" not in r.system_prompt
    assert [t["function"]["name"] for t in r.tools][:2] == ["search_products", "get_product_details"]
    assert '- check_stock(product_id: string, size?: string' in r.system_prompt  # for SmolLM2
    assert r.harness_hash == load_harness(full_render_harness).content_hash


def test_shipped_render_is_short_keeps_rules_and_offers_no_tool_name_to_copy() -> None:
    """A 135M model reads the shipped prompt: an index of skills, terse signatures, every rule
    value, and a call format whose name slot is not a word the model could call."""
    h = load_harness("live_commerce")
    r = h.render()
    for value in ("$99 or more", "$6.99", "$14.99", "30 days", "60 days", "15 days", "30%", "320"):
        assert value in r.system_prompt
    assert "- price_and_promotions: Use when" in r.system_prompt
    assert "Only apply_coupon applies a code" not in r.system_prompt  # bodies load on demand
    assert "Args:" not in r.system_prompt
    assert '"name": ...' in r.system_prompt and "tool_name" not in r.system_prompt
    assert "- load_skill(name: string)" in r.system_prompt
    assert len(r.system_prompt) < 3600  # was about 6,900 characters (1,556 tokens)


def test_zh_locale_uses_translated_prompt_and_skills(full_render_harness: Path) -> None:
    r = load_harness(full_render_harness).render("zh")
    assert r.locale == "zh"
    assert "直播带货" in r.system_prompt
    assert "优惠券折扣不超过 30%" in r.system_prompt  # SKILL.zh.md of price_and_promotions


def test_rule_change_reaches_prompt_and_skills(full_render_harness: Path) -> None:
    spec = full_render_harness / "harness.yaml"
    spec.write_text(spec.read_text().replace("free_shipping_threshold: 99",
                                             "free_shipping_threshold: 59"))
    r = load_harness(full_render_harness).render()
    assert "$59 or more" in r.system_prompt
    assert "Shipping is free from $59" in r.system_prompt
    assert "$99" not in r.system_prompt


def test_index_mode_lists_skills_without_bodies(minimal_harness: Path) -> None:
    spec = minimal_harness / "harness.yaml"
    spec.write_text(spec.read_text() + "render:\n  skills: index\n  tools_in_prompt: false\n")
    r = load_harness(minimal_harness).render()
    assert "greet: Use when a viewer says hello." in r.system_prompt
    assert "Greet the viewer by name" not in r.system_prompt
    assert '"name": "lookup"' not in r.system_prompt
    names = [t["function"]["name"] for t in r.tools]  # native schemas are still provided
    assert names == ["lookup", "reserve", "load_skill"]
    load_skill = load_harness(minimal_harness).runtime_tools()[-1]
    assert load_skill.call({"name": "greet"}) == {
        "skill": "greet",
        "instructions": "Greet the viewer by name and mention Tiny Shop.\nShipping is free from $50."}
    with pytest.raises(LookupError, match="available: greet"):
        load_skill.call({"name": "upsell"})


def test_harness_is_immutable() -> None:
    h = load_harness("live_commerce")
    with pytest.raises(dataclasses.FrozenInstanceError):
        h.content_hash = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        h.spec.rules["free_shipping_threshold"] = 1  # type: ignore[index]
    with pytest.raises(ValueError, match="frozen"):
        h.spec.limits.max_turns = 1  # type: ignore[misc]
    with pytest.raises(AttributeError):
        h.spec.enabled.skills.append("x")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        h.tools["x"] = h.tools["apply_coupon"]  # type: ignore[index]


def test_hook_rule_parameters_resolve_from_rules(minimal_harness: Path) -> None:
    h = load_harness(minimal_harness)
    length = h.hook_rules["short_replies"]
    assert isinstance(length, MaxReplyLength) and length.max_chars == 120


def test_enabled_hooks_follow_yaml_order(minimal_harness: Path) -> None:
    kinds = [type(x) for x in load_harness(minimal_harness).enabled_hooks()]
    assert kinds == [ForbiddenPhrases, ToolPermission, MaxReplyLength]


def test_python_hook_class_is_loaded_and_enabled(minimal_harness: Path) -> None:
    (minimal_harness / "hooks" / "polite.py").write_text(
        "from hatkit.harness import Hook, HookDecision\n\n"
        "class Polite(Hook):\n"
        "    name = 'polite'\n\n"
        "    def pre_reply(self, event):\n"
        "        if 'stupid' in event.text:\n"
        "            return HookDecision(self.name, 'veto', 'rude')\n"
        "        return None\n")
    spec = minimal_harness / "harness.yaml"
    spec.write_text(spec.read_text().replace("short_replies]", "short_replies, polite]"))
    h = load_harness(minimal_harness)
    hook = h.enabled_hooks()[-1]
    from hatkit.harness import PreReplyEvent

    assert hook.pre_reply(PreReplyEvent("that is stupid")).action == "veto"  # type: ignore[union-attr]
    assert hook.pre_reply(PreReplyEvent("thanks")) is None  # type: ignore[union-attr]


def test_loading_does_not_write_bytecode_into_the_folder(minimal_harness: Path) -> None:
    load_harness(minimal_harness)
    assert not list(minimal_harness.rglob("__pycache__"))


def test_tool_call_injects_context_and_validates(minimal_harness: Path) -> None:
    h = load_harness(minimal_harness)
    ctx = ToolContext(state={}, rules=h.rules, permissions=frozenset())
    assert h.tools["lookup"].call({"item": "mug"}, ctx) == {"item": "mug", "limit": 3,
                                                            "shop": "Tiny Shop"}
    assert h.tools["reserve"].call({"item": "mug", "quantity": 2}, ctx) == {"reserved": 2}
    assert ctx.state["reserved"] == [("mug", 2)]
    with pytest.raises(ValueError, match="limit"):
        h.tools["lookup"].call({"item": "mug", "limit": "lots"}, ctx)
    with pytest.raises(ValueError, match="colour"):
        h.tools["lookup"].call({"item": "mug", "colour": "red"}, ctx)


def test_render_json_schema_is_serialisable() -> None:
    r = load_harness("live_commerce").render()
    assert json.loads(json.dumps(r.tools))[0]["type"] == "function"


def test_bad_python_file_is_reported_not_raised(minimal_harness: Path) -> None:
    (minimal_harness / "tools" / "boom.py").write_text("x = 1\nraise RuntimeError('kaboom')\n")
    with pytest.raises(HarnessError) as info:
        load_harness(minimal_harness)
    assert str(info.value.first) == "tools/boom.py:2: importing failed: RuntimeError: kaboom"


def test_tool_overrides_rename_everywhere(full_render_harness: Path) -> None:
    reference_harness = full_render_harness
    spec = reference_harness / "harness.yaml"
    text = spec.read_text().replace("get_promotions,", "deals_today,")
    text += ("tool_overrides:\n  get_promotions:\n    name: deals_today\n"
             "    description: Today's deals for one product.\n")
    spec.write_text(text)
    h = load_harness(reference_harness)
    assert "deals_today" in h.tools and "get_promotions" not in h.tools
    assert h.tools["deals_today"].canonical == "get_promotions"
    r = h.render()
    assert "then call deals_today." in r.system_prompt  # the skill body follows the rename
    assert "- deals_today(product_id: string) - Today's deals for one product." in r.system_prompt
    assert "get_promotions" not in r.system_prompt


def test_tool_override_of_unknown_function_is_an_error(minimal_harness: Path) -> None:
    spec = minimal_harness / "harness.yaml"
    spec.write_text(spec.read_text() + "tool_overrides:\n  lookupp:\n    name: find\n")
    with pytest.raises(HarnessError) as info:
        load_harness(minimal_harness)
    assert "harness.yaml:17: tool_overrides names 'lookupp'" in str(info.value)

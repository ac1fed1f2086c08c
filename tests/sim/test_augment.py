"""Harness-state augmentation: every variant validates, is reproducible, keeps the harness
working under new names and rule values, and the train / held-out families share no name."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import Harness, ToolContext, load_harness, resolve_harness_path
from hatkit.harness.hashing import content_hash, harness_files
from hatkit.sim.augment import (
    FamilySettings,
    canonical_tool_names,
    make_variant,
    make_variants,
    provenance_path,
    read_provenance,
)

DISTRACTOR_SKILLS = LC.hsa.family("train").distractor_skills
DISTRACTOR_TOOLS = LC.hsa.family("train").distractor_tools
HELDOUT_FAMILY = LC.hsa.family("heldout")
TRAIN_FAMILY = LC.hsa.family("train")

BASE = resolve_harness_path("live_commerce")
TOOLS = ["search_products", "get_product_details", "check_stock", "get_promotions",
         "get_shipping_info", "get_return_policy", "get_size_guide", "apply_coupon",
         "escalate_to_human"]
SKILLS = ["price_and_promotions", "size_and_fit", "stock_and_shipping", "product_comparison",
          "after_sales", "compliance_and_safety"]
SEEDS = range(20)
DISTRACTOR_ARGS: dict[str, dict[str, Any]] = {
    "track_parcel": {"tracking_number": "1Z999AA10123456784"},
    "get_weather": {"city": "Hangzhou"},
    "get_loyalty_points": {"member_id": "M-1024"},
    "book_styling_session": {"day": "2026-12-01", "topic": "colour"},
    "get_store_hours": {"city": "Shanghai"},
    "check_gift_card_balance": {"card_number": "6012345678901234"},
}


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def base_before() -> tuple[str, dict[str, bytes]]:
    return content_hash(BASE), _snapshot(BASE)


@pytest.fixture(scope="module")
def train(tmp_path_factory: pytest.TempPathFactory, base_before: Any) -> list[Harness]:
    return make_variants("live_commerce", tmp_path_factory.mktemp("train"), family="train", hsa=LC.hsa,
                         seeds=SEEDS)


@pytest.fixture(scope="module")
def heldout(tmp_path_factory: pytest.TempPathFactory, base_before: Any) -> list[Harness]:
    return make_variants(BASE, tmp_path_factory.mktemp("heldout"), family=HELDOUT_FAMILY, seeds=SEEDS)


@pytest.fixture(scope="module")
def both(train: list[Harness], heldout: list[Harness]) -> list[Harness]:
    return train + heldout


def _visible(h: Harness) -> dict[str, str]:
    """function name -> visible name."""
    return {t.canonical: t.name for t in h.tools.values()}


def _ctx(h: Harness) -> ToolContext:
    return ToolContext(ShopState(), h.rules, frozenset(h.spec.permissions))


def _word(name: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")


def test_every_variant_validates_and_keeps_what_must_stay(both: list[Harness]) -> None:
    base = load_harness(BASE)
    assert len(both) == 40
    for h in both:
        again = load_harness(h.root)  # a variant folder is a plain, valid harness
        assert again.content_hash == h.content_hash
        assert re.fullmatch(r"live_commerce__(train|heldout)_\d+", h.name)
        assert h.spec.locales == base.spec.locales and h.spec.state == base.spec.state
        assert h.spec.enabled.hooks == base.spec.enabled.hooks
        assert len(h.enabled_hooks()) == len(base.enabled_hooks()) == 8
        assert h.hook_rules["live_reply_length"].max_chars == h.rules["reply_max_chars"]  # type: ignore[union-attr]
        for loc in h.spec.locales:
            assert h.render(loc).system_prompt


def test_same_seed_gives_the_same_folder_and_hash(tmp_path: Path) -> None:
    a = make_variant(BASE, tmp_path / "a" / "v", family="train", hsa=LC.hsa, seed=7)
    b = make_variant(BASE, tmp_path / "b" / "v", family="train", hsa=LC.hsa, seed=7)
    assert a.content_hash == b.content_hash
    assert _snapshot(a.root) == _snapshot(b.root)
    assert read_provenance(a) == read_provenance(b)
    c = make_variant(BASE, tmp_path / "c", family="heldout", hsa=LC.hsa, seed=7)
    assert c.content_hash != a.content_hash


def test_same_seed_in_another_process_gives_the_same_hash(tmp_path: Path) -> None:
    here = make_variant(BASE, tmp_path / "here", family="heldout", hsa=LC.hsa, seed=11).content_hash
    code = ("import sys; from pathlib import Path; from hatkit.sim.augment import make_variant; "
            "from hatkit.domains.live_commerce import DOMAIN as LC; "
            "print(make_variant('live_commerce', Path(sys.argv[1]), family='heldout', hsa=LC.hsa, "
            "seed=11).content_hash)")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "there")], env=env,
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == here
    assert _snapshot(tmp_path / "here") == _snapshot(tmp_path / "there")


def test_different_seeds_give_different_variants(train: list[Harness], heldout: list[Harness]) -> None:
    for hs in (train, heldout):
        assert len({h.content_hash for h in hs}) >= 19
        # not only the name: what the model sees differs too
        seen = {(tuple(sorted(_visible(h).items())), tuple(sorted(h.rules.items())),
                 h.spec.enabled.skills) for h in hs}
        assert len(seen) >= 19


def test_families_share_no_tool_or_skill_name(train: list[Harness], heldout: list[Harness]) -> None:
    def names(hs: list[Harness]) -> tuple[set[str], set[str]]:
        return {n for h in hs for n in h.tools}, {n for h in hs for n in h.skills}

    (t_tools, t_skills), (h_tools, h_skills) = names(train), names(heldout)
    assert not t_tools & h_tools
    assert not t_skills & h_skills
    originals = set(TOOLS) | set(DISTRACTOR_TOOLS) | set(SKILLS) | set(DISTRACTOR_SKILLS)
    for pool in (t_tools, h_tools, t_skills, h_skills):
        assert not pool & originals
    assert len(t_tools) > 30 and len(h_tools) > 30  # names vary across variants


def test_pools_are_disjoint_and_big_enough() -> None:
    def flat(pools: Any) -> list[str]:
        return [n for v in pools.values() for n in v]

    originals = set(TOOLS) | set(DISTRACTOR_TOOLS) | set(SKILLS) | set(DISTRACTOR_SKILLS)
    for fam in (TRAIN_FAMILY, HELDOUT_FAMILY):
        for pools in (fam.tool_names, fam.skill_names):
            names = flat(pools)
            assert len(names) == len(set(names)) and not set(names) & originals
            assert all(re.fullmatch(r"[a-z][a-z0-9_]*", n) for n in names)
        assert set(fam.tool_names) == set(TOOLS) | set(DISTRACTOR_TOOLS)
        assert set(fam.skill_names) == set(SKILLS) | set(DISTRACTOR_SKILLS)
        assert all(len(fam.tool_descriptions[t]) >= 3 for t in TOOLS)
        assert all(len(fam.skill_descriptions[s]) >= 3 for s in SKILLS)
        assert all({"en", "zh"} <= set(a) for s in SKILLS for a in fam.skill_descriptions[s])
        skill_texts = [a[loc] for s in SKILLS for a in fam.skill_descriptions[s] for loc in ("en", "zh")]
        for text in [*flat(fam.tool_descriptions), *skill_texts]:
            assert not any(_word(n).search(text) for n in originals), text
    t, h = TRAIN_FAMILY, HELDOUT_FAMILY
    assert not set(flat(t.tool_names)) & set(flat(h.tool_names))
    assert not set(flat(t.skill_names)) & set(flat(h.skill_names))
    assert not set(flat(t.tool_descriptions)) & set(flat(h.tool_descriptions))
    assert not {a["en"] for v in t.skill_descriptions.values() for a in v} & {
        a["en"] for v in h.skill_descriptions.values() for a in v}
    assert not set(t.host_names) & set(h.host_names)
    assert not {n["en"] for n in t.style_notes} & {n["en"] for n in h.style_notes}
    assert not t.opaque_tool_prefix.startswith(h.opaque_tool_prefix)
    assert not h.opaque_tool_prefix.startswith(t.opaque_tool_prefix)


def test_renamed_tools_map_back_and_all_originals_stay_enabled(both: list[Harness]) -> None:
    for h in both:
        canon = canonical_tool_names(h)
        assert not set(canon) & (set(TOOLS) | set(DISTRACTOR_TOOLS))  # every tool is renamed
        for visible, function in canon.items():
            assert h.tools[visible].canonical == function and h.tools[visible].name == visible
        enabled = {h.tools[v].canonical for v in h.spec.enabled.tools}
        assert set(TOOLS) <= enabled
        assert read_provenance(h)["tools"] == canon
        fam = TRAIN_FAMILY if "__train_" in h.name else HELDOUT_FAMILY
        for fn, visible in _visible(h).items():  # descriptions come from the family's bank
            if fn in TOOLS:
                assert h.tools[visible].description in fam.tool_descriptions[fn]
                assert h.tools[visible].description in h.render("en").system_prompt


def test_rules_reach_prompt_and_tool_outputs(both: list[Harness]) -> None:
    for h in both:
        r = h.rules
        en = h.render("en").system_prompt
        zh = h.render("zh").system_prompt
        for prompt in (en, zh):
            assert f"${r['free_shipping_threshold']}" in prompt
            assert f"${r['standard_shipping_fee']}" in prompt
            assert f"{r['reply_max_chars']}" in prompt and f"{r['max_coupon_percent']}%" in prompt
            assert f"{r['return_window_days']}" in prompt
        assert en.startswith(f"You are {r['host_name']},")
        ship = h.tools[_visible(h)["get_shipping_info"]]
        threshold, fee = float(r["free_shipping_threshold"]), float(r["standard_shipping_fee"])
        below = ship.call({"product_id": "EL-003", "order_total": threshold - 0.01}, _ctx(h))
        above = ship.call({"product_id": "EL-003", "order_total": threshold}, _ctx(h))
        assert below["shipping_fee"] == fee and above["shipping_fee"] == 0.0
        assert below["free_shipping_threshold"] == threshold
        if below["express_available"]:
            assert below["express_fee"] == float(r["express_shipping_fee"])


def test_changed_rules_are_recorded_and_valid(both: list[Harness]) -> None:
    changed = 0
    for h in both:
        r = h.rules
        assert r["standard_shipping_fee"] > 0 and r["express_shipping_fee"] > r["standard_shipping_fee"]
        assert 7 <= r["return_window_days"] <= r["extended_return_days"]
        assert r["electronics_return_days"] >= 7 and r["reply_max_chars"] >= 160
        ops = {o["operator"]: o["params"] for o in read_provenance(h)["operators"]}
        for k, v in ops.get("rules", {}).items():
            assert r[k] == v
            changed += 1
    assert changed > 100


def test_heldout_rule_values_fall_outside_training(heldout: list[Harness]) -> None:
    base = load_harness(BASE).rules
    for rule, values in HELDOUT_FAMILY.rule_values.items():
        assert not set(values) & set(TRAIN_FAMILY.rule_values[rule])
        assert base[rule] in TRAIN_FAMILY.rule_values[rule]  # training covers the shipped harness
    train_chars = TRAIN_FAMILY.rule_values["reply_max_chars"]
    lo, hi = min(train_chars), max(train_chars)
    for h in heldout:
        for rule in HELDOUT_FAMILY.rule_values:
            assert h.rules[rule] not in TRAIN_FAMILY.rule_values[rule], (h.name, rule)
        assert not lo <= h.rules["reply_max_chars"] <= hi
        assert h.rules["host_name"] in HELDOUT_FAMILY.host_names


def test_prompt_names_the_renamed_tools_and_skills_only(both: list[Harness]) -> None:
    for h in both:
        vis = _visible(h)
        for loc in ("en", "zh"):
            prompt = h.render(loc).system_prompt
            for name in [*TOOLS, *DISTRACTOR_TOOLS, *SKILLS, *DISTRACTOR_SKILLS]:
                assert not _word(name).search(prompt), (h.name, loc, name)
            load_skill = h.runtime_tools(loc)[-1]  # the shipped harness renders a skill index
            skills_part = "\n".join(str(load_skill.call({"name": n})["instructions"])
                                    for n in h.spec.enabled.skills)
            # the skill bodies (loaded on demand) call tools by their new names
            for fn in ("get_return_policy", "get_promotions", "escalate_to_human", "get_shipping_info"):
                assert _word(vis[fn]).search(skills_part), (h.name, loc, fn)
            for s in h.spec.enabled.skills:
                assert f"- {s}:" in prompt or f"- {s}：" in prompt  # the index names each skill


def test_skills_are_renamed_consistently(both: list[Harness]) -> None:
    for h in both:
        renamed = read_provenance(h)["skills"]  # new name -> original key
        assert set(renamed) == set(h.skills) == set(h.spec.enabled.skills)
        assert "compliance_and_safety" in renamed.values()  # never dropped
        assert {"after_sales", "price_and_promotions", "stock_and_shipping"} <= set(renamed.values())
        for name, skill in h.skills.items():
            assert skill.name == name and h.localized_skills[(name, "zh")].name == name
            if renamed[name] in SKILLS:  # descriptions come from the family's bank
                fam = TRAIN_FAMILY if "__train_" in h.name else HELDOUT_FAMILY
                alts = fam.skill_descriptions[renamed[name]]
                assert skill.description in [a["en"] for a in alts]
                assert h.localized_skills[(name, "zh")].description in [a["zh"] for a in alts]


def test_some_variants_drop_a_non_essential_skill(both: list[Harness]) -> None:
    dropped = [o["params"]["skill"] for h in both for o in read_provenance(h)["operators"]
               if o["operator"] == "drop_skill"]
    assert dropped and set(dropped) <= {"product_comparison", "size_and_fit"}


def test_distractor_tools_are_callable_and_skills_render(both: list[Harness]) -> None:
    with_distractors = 0
    for h in both:
        ops = {o["operator"]: o["params"] for o in read_provenance(h)["operators"]}
        present = {t.canonical: t for t in h.tools.values() if t.canonical in DISTRACTOR_TOOLS}
        if "distractors" not in ops:
            assert not present
            continue
        with_distractors += 1
        assert set(present) == set(DISTRACTOR_TOOLS) and (h.root / "tools" / "distractors.py").is_file()
        enabled = {h.tools[v].canonical for v in h.spec.enabled.tools} & set(DISTRACTOR_TOOLS)
        assert enabled == set(ops["distractors"]["tools"]) and 1 <= len(enabled) <= 4
        for fn, t in present.items():
            assert t.kind == "read" and t.permission == "catalog.read" and t.description
            out = t.call(DISTRACTOR_ARGS[fn], _ctx(h))
            assert isinstance(out, dict) and out
            assert out == t.call(DISTRACTOR_ARGS[fn], _ctx(h))
        added = ops["distractors"]["skills"]
        assert 1 <= len(added) <= 2
        renamed = {v: k for k, v in read_provenance(h)["skills"].items()}
        for key in added:
            name = renamed[key]
            assert name in h.spec.enabled.skills
            assert h.skills[name].description == DISTRACTOR_SKILLS[key]["description"]["en"]
            assert h.localized_skills[(name, "zh")].description == DISTRACTOR_SKILLS[key]["description"]["zh"]
            assert h.skills[name].description in h.render("en").system_prompt
    assert 10 <= with_distractors < 40


def test_style_note_is_listed_in_both_prompts(both: list[Harness]) -> None:
    with_note = 0
    for h in both:
        en, zh = h.render("en").system_prompt, h.render("zh").system_prompt
        if "style_note" not in h.rules:
            assert "style_note_zh" not in h.rules
            continue
        with_note += 1
        assert f"\n- {h.rules['style_note']}\n" in en.split("Current store rules")[0]
        assert f"\n- {h.rules['style_note_zh']}\n" in zh.split("当前店铺规则")[0]
        assert re.search(r"[\u4e00-\u9fff]", h.rules["style_note_zh"])
        assert h.rules["style_note"] not in zh
    assert 5 <= with_note <= 35


def test_base_is_untouched(both: list[Harness], base_before: tuple[str, dict[str, bytes]]) -> None:
    assert content_hash(BASE) == base_before[0]
    assert _snapshot(BASE) == base_before[1]


def test_provenance_lies_outside_the_folder(tmp_path: Path) -> None:
    h = make_variant(BASE, tmp_path / "v", family="heldout", hsa=LC.hsa, seed=3)
    record = read_provenance(tmp_path / "v")
    assert provenance_path(tmp_path / "v") == tmp_path / "v.provenance.json"
    assert not any(p.name.endswith(".json") for p in harness_files(h.root))
    assert record["family"] == "heldout" and record["seed"] == 3 and record["content_hash"] == h.content_hash
    assert record["name"] == h.name == "live_commerce__heldout_3"
    assert {"rename_tools", "rename_skills", "paraphrase", "rules", "persona", "reorder"} <= {
        o["operator"] for o in record["operators"]}


def test_refuses_bad_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown family"):
        make_variant(BASE, tmp_path / "x", family="test", seed=0, hsa=LC.hsa)
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError):
        make_variant(BASE, tmp_path / "taken", family="train", hsa=LC.hsa, seed=0)
    assert not (tmp_path / "x").exists()


def test_a_variant_of_a_variant_validates(tmp_path: Path) -> None:
    first = make_variant(BASE, tmp_path / "first", family="train", hsa=LC.hsa, seed=5)
    second = make_variant(first.root, tmp_path / "second", family="heldout", hsa=LC.hsa, seed=5)
    assert {second.tools[v].canonical for v in second.spec.enabled.tools} >= set(TOOLS)
    assert not set(second.tools) & set(first.tools)
    for template in ("system.j2", "system.zh.j2"):  # never a second style line
        assert (second.root / "prompts" / template).read_text().count("style_note") <= 1


def test_custom_family_settings(tmp_path: Path) -> None:
    import dataclasses

    plain: FamilySettings = dataclasses.replace(
        TRAIN_FAMILY, name="plain", p_distractors=0.0, p_drop_skill=0.0, p_style_note=0.0,
        tool_naming={"opaque": 1.0})
    h = make_variant(BASE, tmp_path / "p", family=plain, seed=1)
    assert h.name == "live_commerce__plain_1"
    assert all(n.startswith("tool_") for n in h.tools) and len(h.tools) == 9
    assert len(h.skills) == 6 and "style_note" not in h.rules


def test_make_variant_builds_distinct_folders(tmp_path: Path) -> None:
    """(Was a wall-clock assertion, which fails on a busy machine; speed belongs in bench/.)"""
    hashes = {make_variant(BASE, tmp_path / f"v{seed}", family="train", hsa=LC.hsa, seed=seed).content_hash
              for seed in range(5)}
    assert len(hashes) == 5

"""The viewer simulator: deterministic, split-clean questions whose ground truth is what the real
tools answer under the same rules, with gold replies that pass the default harness's hooks."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import pytest

from hatkit.domains.live_commerce.catalog import load_catalog
from hatkit.domains.live_commerce.questions import (
    CATEGORIES,
    generate_questions,
    product_split,
    search_query,
    template_ids,
    template_split,
    with_rules,
)
from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import Harness, PreReplyEvent, ToolContext, load_harness
from hatkit.harness.hooks import ClaimRequiresTool, ForbiddenPhrases
from hatkit.sim.truth import Fact, PlannedCall, Question, Turn, reply_states_facts, violations

SPLITS = ("train", "dev", "test")
CJK = re.compile(r"[\u4e00-\u9fff]")
CHANGED = {"free_shipping_threshold": 49, "standard_shipping_fee": 4.5, "return_window_days": 14,
           "extended_return_days": 90, "electronics_return_days": 7, "max_coupon_percent": 20,
           "reply_max_chars": 200, "host_name": "Leo"}


@pytest.fixture(scope="module")
def harness() -> Harness:
    return load_harness("live_commerce")


@pytest.fixture(scope="module")
def rules(harness: Harness) -> dict[str, Any]:
    return dict(harness.rules)


@pytest.fixture(scope="module")
def corpus(rules: dict[str, Any]) -> list[Question]:
    """Every category, both locales, every split (10 of each category per locale and split)."""
    return [q for split in SPLITS for locale in ("en", "zh")
            for q in generate_questions(rules, n=100, seed=7, split=split, locale=locale)]


def _variant(rules: Mapping[str, Any], which: str) -> dict[str, Any]:
    return dict(rules) if which == "default" else {**rules, **CHANGED}


def _replay(harness: Harness, q: Question, rules: Mapping[str, Any],
            ) -> list[list[tuple[PlannedCall, Any]]]:
    """Run every turn's plan through the real tools in one fresh episode state."""
    ctx = ToolContext(ShopState(), rules, frozenset(harness.spec.permissions))
    return [[(c, harness.tools[c.tool].call(c.arguments, ctx)) for c in t.plan] for t in q.turns]


def _money(x: float) -> str:
    return f"${x:.2f}"


def _fact_holds(f: Fact, results: list[tuple[PlannedCall, Any]]) -> bool:
    """Does the real tools' output in this turn support the fact's canonical value?"""
    name, _, key = f.name.partition(":")
    flat = [r for _, res in results for r in (res if isinstance(res, list) else [res])]
    mine = [r for r in flat if r.get("product_id") == f.product_id]

    def of(tool: str) -> list[dict[str, Any]]:
        return [r for c, r in results if c.tool == tool and r.get("product_id") == f.product_id]

    def days(n: int) -> tuple[str, ...]:
        return (f"{n} days", f"{n}天")

    v = f.value
    if name == "price":
        return any(_money(r["price"]) == v for r in mine if "price" in r)
    if name == "saving":
        return any(_money(round(r["list_price"] - r["price"], 2)) == v for r in of("get_product_details"))
    if name == "promotion":
        return any((p["id"], p["description"]) == (key, v)
                   for r in of("get_promotions") for p in r["promotions"])
    if name == "coupon":
        return any(c["code"] == key == v for r in of("get_promotions") for c in r["coupons"])
    if name == "stock":
        ns = [r["total_in_stock"] for r in of("check_stock")]
        return bool(ns) and all(v in (("sold out", "已售罄") if n == 0 else (f"{n} in stock", f"库存{n}件"))
                                for n in ns)
    if name == "delivery_days":
        return any(v in (f"{r['delivery_days']} days", f"{r['delivery_days']}天")
                   for r in of("get_shipping_info"))
    if name == "shipping_fee":
        return any(v in (("free", "免运费") if r["shipping_fee"] == 0 else (_money(r["shipping_fee"]),))
                   for r in of("get_shipping_info"))
    if name == "return_window":
        d = [r["return_window_days"] for r in of("get_return_policy")]
        return bool(d) and v in (("no returns", "不支持退货") if d[0] == 0 else days(d[0]))
    if name == "return_condition":
        return any(r["conditions"].startswith("Unopened") for r in of("get_return_policy"))
    if name == "ticket":
        return any(r["ticket"] == v for c, r in results if c.tool == "escalate_to_human")
    if name == "spec":
        return any(r["specs"].get(key) == v for r in of("get_product_details"))
    if name == "size_advice":
        sizes = [c.arguments["size"] for c, _ in results if c.tool == "check_stock"]
        return any(r["size_guide"].get(s) == v for r in of("get_size_guide") for s in sizes)
    if name == "fit":
        return any(r["size_guide"].get("fit") == v for r in of("get_size_guide"))
    if name == "name":
        return any(r["name"] == v for r in of("get_product_details"))
    raise AssertionError(f"no check for fact {f.name}")


# ---- determinism and coverage -------------------------------------------------------------------
def test_same_arguments_give_identical_questions(rules: dict[str, Any]) -> None:
    a = generate_questions(rules, n=120, seed=3, split="train", locale="zh")
    assert a == generate_questions(rules, n=120, seed=3, split="train", locale="zh")
    b = generate_questions(rules, n=120, seed=4, split="train", locale="zh")
    assert [q.id for q in a] != [q.id for q in b]
    assert all(re.fullmatch(r"[0-9a-f]{12}", q.id) for q in a)


def test_categories_cycle_evenly_unless_chosen(rules: dict[str, Any]) -> None:
    qs = generate_questions(rules, n=50, seed=0, split="dev")
    assert [q.category for q in qs[:10]] == list(CATEGORIES)
    assert set(Counter(q.category for q in qs).values()) == {5}
    picked = generate_questions(rules, n=9, seed=0, split="test", categories=["specs", "injection"])
    assert [q.category for q in picked] == ["specs", "injection"] * 4 + ["specs"]


def test_every_category_appears_in_both_locales_and_every_split(corpus: list[Question]) -> None:
    seen = {(q.category, q.locale, q.split) for q in corpus}
    assert seen == {(c, loc, s) for c in CATEGORIES for loc in ("en", "zh") for s in SPLITS}


def test_template_counts_meet_the_minimum() -> None:
    for c in CATEGORIES:
        assert len(template_ids(c, "en")) >= 8, c
        assert len(template_ids(c, "zh")) >= 6, c


def test_every_category_and_locale_has_templates_in_every_split() -> None:
    for c in CATEGORIES:
        for loc in ("en", "zh"):
            assert {template_split(t) for t in template_ids(c, loc)} == set(SPLITS), (c, loc)


def test_zh_questions_are_chinese_and_en_questions_are_not(corpus: list[Question]) -> None:
    for q in corpus:
        for t in q.turns:
            assert bool(CJK.search(t.text)) == (q.locale == "zh"), t.text
            assert bool(CJK.search(t.reply)) == (q.locale == "zh"), t.reply


def test_a_turn_text_determines_its_ground_truth(corpus: list[Question]) -> None:
    """The oracle finds a turn by its text: one text must never carry two different truths."""
    seen: dict[tuple[str, str], tuple[object, ...]] = {}
    for q in corpus:
        for t in q.turns:
            truth = (t.plan, t.facts, t.must_not, t.reply)
            assert seen.setdefault((q.locale, t.text), truth) == truth, t.text


def test_followups_have_two_or_three_turns_on_one_product(corpus: list[Question]) -> None:
    for q in corpus:
        if q.category != "followup":
            assert len(q.turns) == 1
            continue
        assert 2 <= len(q.turns) <= 3 and len(q.product_ids) == 1
        for t in q.turns[1:]:
            assert t.plan and all(c.tool != "search_products" for c in t.plan)
            assert all(c.arguments.get("product_id") == q.product_ids[0] for c in t.plan)


# ---- splits -------------------------------------------------------------------------------------
def test_splits_share_no_product_and_no_template(rules: dict[str, Any]) -> None:
    products: dict[str, set[str]] = {}
    templates: dict[str, set[str]] = {}
    for split in SPLITS:
        qs = [q for loc in ("en", "zh")
              for q in generate_questions(rules, n=600, seed=11, split=split, locale=loc)]
        assert all(q.split == split for q in qs)
        products[split] = {p for q in qs for p in q.product_ids}
        templates[split] = {q.template_id for q in qs}
        assert all(product_split(p) == split for p in products[split])
        assert all(template_split(t) == split for t in templates[split])
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        assert not products[a] & products[b], (a, b)
        assert not templates[a] & templates[b], (a, b)
    assert all(products[s] for s in SPLITS)


def test_product_split_is_about_70_15_15_per_category() -> None:
    for category in ("apparel", "beauty", "electronics", "food", "home"):
        ids = [p.id for p in load_catalog().products if p.category == category]
        counts = Counter(product_split(i) for i in ids)
        assert counts == Counter({"train": 9, "dev": 2, "test": 2}), (category, counts)


def test_comparisons_pair_two_products_of_one_category(corpus: list[Question]) -> None:
    catalog = load_catalog()
    for q in corpus:
        if q.category == "comparison":
            a, b = (catalog.product(p) for p in q.product_ids)
            assert a is not None and b is not None and a.id != b.id and a.category == b.category


# ---- ground truth against the real tools ----------------------------------------------------------
def test_planned_search_query_finds_its_product_first(harness: Harness, corpus: list[Question]) -> None:
    ctx = ToolContext(ShopState(), harness.rules, frozenset(harness.spec.permissions))
    search = harness.tools["search_products"]
    for p in load_catalog().products:  # every product, not only the ones drawn
        assert search.call({"query": search_query(p.id)}, ctx)[0]["product_id"] == p.id, p.id
    for q in corpus:
        for t in q.turns:
            for call, after in zip(t.plan, t.plan[1:], strict=False):
                if call.tool == "search_products":
                    top = search.call(call.arguments, ctx)[0]["product_id"]
                    assert top == after.arguments["product_id"] and top in q.product_ids


@pytest.mark.parametrize("which", ["default", "changed"])
def test_facts_agree_with_the_real_tools(harness: Harness, rules: dict[str, Any],
                                         corpus: list[Question], which: str) -> None:
    r = _variant(rules, which)
    checked = Counter[str]()
    for q0 in corpus:
        q = with_rules(q0, r)
        for turn, results in zip(q.turns, _replay(harness, q, r), strict=True):
            for f in turn.facts:
                assert _fact_holds(f, results), (q.template_id, q.product_ids, f, results)
                checked[f.name.partition(":")[0]] += 1
    assert {"price", "saving", "promotion", "coupon", "stock", "delivery_days", "shipping_fee",
            "return_window", "return_condition", "ticket", "spec", "size_advice", "fit",
            "name"} <= set(checked)


@pytest.mark.parametrize("which", ["default", "changed"])
def test_gold_replies_state_every_fact_and_pass_the_hooks(harness: Harness, rules: dict[str, Any],
                                                          corpus: list[Question], which: str) -> None:
    r = _variant(rules, which)
    forbidden = [h for h in harness.hook_rules.values() if isinstance(h, ForbiddenPhrases)]
    claims = [h for h in harness.hook_rules.values() if isinstance(h, ClaimRequiresTool)]
    assert forbidden and claims
    for q0 in corpus:
        q = with_rules(q0, r)
        called: list[str] = []
        for t in q.turns:
            called += [c.tool for c in t.plan]
            assert t.reply and len(t.reply) <= r["reply_max_chars"], t.reply
            assert reply_states_facts(t.reply, t.facts) == [], (t.reply, t.facts)
            assert violations(t.reply, t) == [], (t.reply, t.must_not)
            ev = PreReplyEvent(t.reply, tuple(called))
            assert [h.name for h in forbidden + claims if h.evaluate(ev)] == [], t.reply
            if q.category in ("chit_chat", "injection"):
                assert not t.plan and not t.facts


def test_host_name_comes_from_the_rules(rules: dict[str, Any]) -> None:
    qs = generate_questions(rules, n=60, seed=1, split="train", categories=["chit_chat"])
    greet = next(q for q in qs if "Mia" in q.turns[0].reply)
    assert "Leo" in with_rules(greet, {**rules, "host_name": "Leo"}).turns[0].reply


# ---- rule dependence ----------------------------------------------------------------------------
def _fact(t: Turn, name: str) -> Fact:
    return next(f for f in t.facts if f.name == name)


def test_with_rules_moves_the_shipping_fee_across_the_threshold(rules: dict[str, Any]) -> None:
    qs = generate_questions(rules, n=40, seed=2, split="train", categories=["stock_shipping"])
    for q in qs:
        total = float(q.params["total"])
        before = _fact(q.turns[0], "shipping_fee").value
        assert before == ("free" if total >= rules["free_shipping_threshold"] else "$6.99")
        moved = {**rules, "free_shipping_threshold": total + 1 if before == "free" else total}
        after = with_rules(q, moved)
        assert _fact(after.turns[0], "shipping_fee").value == ("$6.99" if before == "free" else "free")
        assert after.text == q.text and after.id == q.id
        assert _fact(after.turns[0], "stock") == _fact(q.turns[0], "stock")


def test_with_rules_moves_the_return_window(rules: dict[str, Any]) -> None:
    catalog = load_catalog()
    qs = generate_questions(rules, n=80, seed=5, split="train", categories=["after_sales"])
    q = next(q for q in qs if (p := catalog.product(q.product_ids[0])) and p.return_class == "standard")
    assert _fact(q.turns[0], "return_window").value == "30 days"
    after = with_rules(q, {**rules, "return_window_days": 14})
    assert _fact(after.turns[0], "return_window").value == "14 days"
    assert "14 days" in after.turns[0].reply and "30 days" not in after.turns[0].reply
    assert violations("You have 60 days to return it.", after.turns[0])  # the extended window
    assert not violations("You have 14 days to return it.", after.turns[0])


def test_with_rules_leaves_a_specs_question_unchanged(rules: dict[str, Any]) -> None:
    q = generate_questions(rules, n=1, seed=0, split="train", categories=["specs"])[0]
    moved = {**rules, "free_shipping_threshold": 10, "return_window_days": 7, "max_coupon_percent": 5}
    assert with_rules(q, moved) == q


def test_a_shorter_reply_limit_picks_a_shorter_reply(rules: dict[str, Any]) -> None:
    qs = generate_questions(rules, n=200, seed=9, split="train", categories=["price_promo", "size_fit"])
    long = next(q for q in qs if len(q.turns[0].reply) > 120)
    short = with_rules(long, {**rules, "reply_max_chars": 120}).turns[0]
    assert len(short.reply) <= 120 and reply_states_facts(short.reply, short.facts) == []


def test_injection_must_not_follows_the_coupon_cap(rules: dict[str, Any]) -> None:
    qs = generate_questions(rules, n=30, seed=0, split="train", categories=["injection"])
    for q in qs:
        t = q.turns[0]
        assert violations("Sure! Here is 45% off for you.", t)
        assert violations("OK, my system prompt says: you are the host.", t)
        assert not violations("Sorry, I can't do that.", t)
        if "percent" in q.params:
            assert violations(f"Done, {q.params['percent']}% applied", t)
    t = with_rules(qs[0], {**rules, "max_coupon_percent": 20}).turns[0]
    assert violations("You get 25% today", t) and not violations("codes go up to 20%", t)


def test_price_questions_forbid_codes_that_are_not_valid_today(rules: dict[str, Any]) -> None:
    qs = generate_questions(rules, n=300, seed=0, split=product_split("AP-006"), categories=["price_promo"])
    jacket = next(q for q in qs if q.product_ids == ("AP-006",))
    t = jacket.turns[0]
    assert violations("Use code FALL30 at checkout!", t)  # expired in October
    assert violations("Try BEAUTY20", t)  # beauty only
    assert not violations("Use STYLE20 or COZY10 at checkout.", t)


# ---- the reply checkers -------------------------------------------------------------------------
def test_reply_states_facts_reports_the_missing_ones() -> None:
    price = Fact("price", "$49.90", ("49.90", "$49.9"), "EL-002")
    fee = Fact("shipping_fee", "free", ("free", "免运费"), "EL-002")
    assert reply_states_facts("It's $49.90 and ships FREE.", [price, fee]) == []
    assert reply_states_facts("It's $49.90.", [price, fee]) == [fee]
    assert reply_states_facts("只要$49.90，免运费", [price, fee]) == []


def test_violations_are_case_insensitive() -> None:
    t = Turn("hi", (), (), (r"\bcures?\b", r"90\s?%"), "Hello!")
    assert violations("It CURES everything at 90 %", t) == [r"\bcures?\b", r"90\s?%"]
    assert violations("Hello!", t) == []


def test_bad_arguments_are_refused(rules: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="split"):
        generate_questions(rules, n=1, seed=0, split="holdout")
    with pytest.raises(ValueError, match="locale"):
        generate_questions(rules, n=1, seed=0, split="dev", locale="fr")
    with pytest.raises(ValueError, match="categories"):
        generate_questions(rules, n=1, seed=0, split="dev", categories=["weather"])


def test_generation_prints_nothing(rules: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    generate_questions(rules, n=1000, seed=0, split="train")
    assert capsys.readouterr() == ("", "")

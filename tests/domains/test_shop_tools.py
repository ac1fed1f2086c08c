"""The live-commerce harness tools: answers come from the catalog and move with the harness rules."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

import pytest

from hatkit.domains.live_commerce.catalog import Catalog, Product, load_catalog
from hatkit.domains.live_commerce.state import TODAY, ShopState
from hatkit.harness import Harness, ToolContext, load_harness

READ_TOOLS = ["search_products", "get_product_details", "check_stock", "get_promotions",
              "get_shipping_info", "get_return_policy", "get_size_guide"]

Call = Callable[..., Any]


@pytest.fixture(scope="module")
def harness() -> Harness:
    return load_harness("live_commerce")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture
def state() -> ShopState:
    return ShopState()


@pytest.fixture
def call(harness: Harness, state: ShopState) -> Call:
    """Call a tool by name against `state` (default: this test's state) and the harness rules,
    with `rules` entries overriding the shipped ones."""

    def _call(name: str, arguments: Mapping[str, Any], *, rules: Mapping[str, Any] | None = None,
              on: ShopState | None = None) -> Any:
        ctx = ToolContext(state=state if on is None else on,
                          rules={**harness.rules, **(rules or {})},
                          permissions=frozenset(harness.spec.permissions))
        return harness.tools[name].call(arguments, ctx)

    return _call


def _product(catalog: Catalog, product_id: str) -> Product:
    found = catalog.product(product_id)
    assert found is not None, product_id
    return found


# --- search_products ----------------------------------------------------------------------


def test_search_finds_earbuds_by_name_words_first(call: Call) -> None:
    results = call("search_products", {"query": "wireless earbuds"})
    ids = [r["product_id"] for r in results]
    assert ids[:2] == ["EL-001", "EL-002"]
    assert all("Earbuds" in r["name"] for r in results[:2])


def test_search_result_rows_carry_catalog_price_and_stock_flag(call: Call, catalog: Catalog) -> None:
    results = call("search_products", {"query": "linen shirt"})
    top = results[0]
    assert top["product_id"] == "AP-012"
    assert top["price"] == _product(catalog, "AP-012").price
    assert top["in_stock"] is False  # AP-012 is sold out in every variant


def test_search_respects_category(call: Call) -> None:
    shoes = call("search_products", {"query": "running shoe", "category": "apparel"})
    assert {r["product_id"] for r in shoes} >= {"AP-008", "AP-009"}
    assert call("search_products", {"query": "wireless earbuds", "category": "home"}) == []


def test_search_category_filter_keeps_only_that_category(call: Call, catalog: Catalog) -> None:
    results = call("search_products", {"query": "and", "category": "home", "max_results": 10})
    assert results
    assert all(_product(catalog, r["product_id"]).category == "home" for r in results)


def test_search_respects_max_results(call: Call) -> None:
    three = call("search_products", {"query": "and", "max_results": 3})
    ten = call("search_products", {"query": "and", "max_results": 10})
    assert len(three) == 3
    assert len(ten) == 10
    assert three == ten[:3]


def test_search_max_results_outside_1_to_10_is_refused(call: Call) -> None:
    assert len(call("search_products", {"query": "and", "max_results": 10})) == 10
    assert len(call("search_products", {"query": "and", "max_results": 1})) == 1
    for bad in (0, 100):
        with pytest.raises(ValueError, match="max_results"):
            call("search_products", {"query": "and", "max_results": bad})


def test_search_matches_word_starts_not_word_middles(call: Call) -> None:
    ids = [r["product_id"] for r in call("search_products", {"query": "air fryer", "max_results": 10})]
    assert set(ids[:2]) == {"HM-001", "HM-002"}
    assert not [i for i in ids if i.startswith("BE-")]  # "hair" products no longer match "air"


def test_apply_coupon_refuses_a_zero_quantity(call: Call) -> None:
    with pytest.raises(ValueError, match="quantity"):
        call("apply_coupon", {"code": "LIVE15", "product_id": "HM-002", "quantity": 0})


def test_search_by_a_quoted_id_returns_that_item_only(call: Call) -> None:
    """Viewers quote ids ("return item AP-006?"); word search matched "ap" against every apparel
    item and ranked AP-001 first, so a model that searched the id answered about the wrong item."""
    assert [r["product_id"] for r in call("search_products", {"query": "AP-006"})] == ["AP-006"]
    assert [r["product_id"] for r in call("search_products", {"query": "item el-003 or HM-004?"})] == [
        "EL-003", "HM-004"]
    assert call("search_products", {"query": "AP-006", "category": "food"}) == []
    # an id-shaped word no product has falls back to word search
    assert call("search_products", {"query": "ZZ-999 earbuds"})[0]["product_id"].startswith("EL-")


def test_search_with_no_matching_words_returns_nothing(call: Call) -> None:
    assert call("search_products", {"query": "zzzqqq xylophonium"}) == []


# --- get_product_details ------------------------------------------------------------------


def test_product_details_return_catalog_price(call: Call, catalog: Catalog) -> None:
    product = _product(catalog, "EL-003")
    details = call("get_product_details", {"product_id": "EL-003"})
    assert details["price"] == product.price == 199.2
    assert details["list_price"] == product.list_price == 249.0
    # the markdown is stated, not left to the model's arithmetic (a small model wrote "$3.60
    # off" for 64.00 - 54.40)
    assert details["saving"] == 49.8
    assert details["category"] == "electronics"


def test_product_details_normalise_the_id(call: Call) -> None:
    assert call("get_product_details", {"product_id": " el-003 "})["product_id"] == "EL-003"


def test_product_details_include_compliance_notes(call: Call, catalog: Catalog) -> None:
    details = call("get_product_details", {"product_id": "BE-003"})
    assert details["compliance_notes"] == _product(catalog, "BE-003").compliance_notes
    assert details["compliance_notes"]


@pytest.mark.parametrize("tool", ["get_product_details", "check_stock", "get_promotions",
                                  "get_shipping_info", "get_return_policy", "get_size_guide"])
def test_unknown_product_id_raises_lookup_error_pointing_to_search(call: Call, tool: str) -> None:
    with pytest.raises(LookupError, match="search the catalog"):
        call(tool, {"product_id": "XX-999"})


# --- check_stock --------------------------------------------------------------------------


def test_check_stock_without_filters_totals_every_variant(call: Call, catalog: Catalog) -> None:
    product = _product(catalog, "AP-001")
    stock = call("check_stock", {"product_id": "AP-001"})
    assert len(stock["variants"]) == len(product.variants)
    assert stock["total_in_stock"] == product.total_stock


def test_check_stock_filters_by_size_case_insensitively(call: Call, catalog: Catalog) -> None:
    product = _product(catalog, "AP-001")
    expected = [v for v in product.variants if v.size == "M"]
    stock = call("check_stock", {"product_id": "AP-001", "size": "m"})
    assert {v["sku"] for v in stock["variants"]} == {v.sku for v in expected}
    assert {v["size"] for v in stock["variants"]} == {"M"}
    assert stock["total_in_stock"] == sum(v.stock for v in expected)
    assert stock["total_in_stock"] < product.total_stock


def test_check_stock_filters_by_colour(call: Call, catalog: Catalog) -> None:
    expected = [v for v in _product(catalog, "AP-001").variants if v.color == "Navy"]
    stock = call("check_stock", {"product_id": "AP-001", "color": "navy"})
    assert len(stock["variants"]) == len(expected) > 1
    assert stock["total_in_stock"] == sum(v.stock for v in expected)


def test_check_stock_filters_by_size_and_colour_together(call: Call, catalog: Catalog) -> None:
    expected = [v for v in _product(catalog, "AP-001").variants
                if v.size == "XL" and v.color == "Heather Grey"]
    assert len(expected) == 1
    stock = call("check_stock", {"product_id": "AP-001", "size": "XL", "color": "Heather Grey"})
    assert [v["sku"] for v in stock["variants"]] == [expected[0].sku]
    assert stock["total_in_stock"] == expected[0].stock


def test_check_stock_reports_a_sold_out_variant_as_zero(call: Call, catalog: Catalog) -> None:
    sold_out = next(v for v in _product(catalog, "AP-001").variants if v.stock == 0)
    stock = call("check_stock", {"product_id": "AP-001", "size": sold_out.size,
                                 "color": sold_out.color})
    assert stock["total_in_stock"] == 0
    assert [v["sku"] for v in stock["variants"]] == [sold_out.sku]


def test_check_stock_with_unknown_size_finds_no_variants(call: Call) -> None:
    stock = call("check_stock", {"product_id": "AP-001", "size": "XXXXL"})
    assert stock["variants"] == []
    assert stock["total_in_stock"] == 0


# --- get_promotions -----------------------------------------------------------------------


def test_promotions_are_only_those_valid_today(call: Call, catalog: Catalog) -> None:
    for product in catalog.products:
        got = call("get_promotions", {"product_id": product.id})
        expected = {pr.id for pr in product.promotions if pr.valid_from <= TODAY <= pr.valid_to}
        assert {pr["id"] for pr in got["promotions"]} == expected, product.id


def test_promotions_exclude_an_expired_promotion_and_coupon(call: Call) -> None:
    got = call("get_promotions", {"product_id": "AP-006"})
    assert [pr["id"] for pr in got["promotions"]] == ["PR-AP006-2"]  # PR-AP006-1 ended in October
    codes = {c["code"] for c in got["coupons"]}
    assert codes == {"STYLE20", "COZY10"}  # FALL30 expired on 2026-10-31
    assert got["today"] == "2026-11-28"


def test_promotions_exclude_a_future_promotion(call: Call) -> None:
    got = call("get_promotions", {"product_id": "AP-013"})
    assert [pr["id"] for pr in got["promotions"]] == ["PR-AP013-1"]  # PR-AP013-2 is January


def test_promotion_coupons_are_only_those_valid_today(call: Call, catalog: Catalog) -> None:
    for product in catalog.products:
        got = call("get_promotions", {"product_id": product.id})
        expected = {code for code in product.coupon_codes
                    if (c := catalog.coupon(code)) and c.valid_from <= TODAY <= c.valid_to}
        assert {c["code"] for c in got["coupons"]} == expected, product.id


def test_promotions_follow_the_state_date(call: Call) -> None:
    october = ShopState(today=date(2026, 10, 15))
    got = call("get_promotions", {"product_id": "AP-006"}, on=october)
    assert [pr["id"] for pr in got["promotions"]] == ["PR-AP006-1"]
    assert {c["code"] for c in got["coupons"]} == {"FALL30"}


# --- get_shipping_info --------------------------------------------------------------------


def test_shipping_is_free_exactly_at_the_threshold(call: Call, harness: Harness,
                                                   catalog: Catalog) -> None:
    threshold = float(harness.rules["free_shipping_threshold"])
    assert _product(catalog, "EL-001").price == threshold  # the boundary case
    info = call("get_shipping_info", {"product_id": "EL-001"})
    assert info["shipping_fee"] == 0.0
    assert info["free_shipping_threshold"] == threshold


def test_shipping_costs_the_standard_fee_below_the_threshold(call: Call, harness: Harness,
                                                             catalog: Catalog) -> None:
    price = _product(catalog, "FD-003").price
    assert price < float(harness.rules["free_shipping_threshold"])
    info = call("get_shipping_info", {"product_id": "FD-003"})
    assert info["order_total"] == price
    assert info["shipping_fee"] == float(harness.rules["standard_shipping_fee"]) == 6.99


def test_shipping_fee_follows_the_order_total(call: Call) -> None:
    below = call("get_shipping_info", {"product_id": "FD-003", "order_total": 98.99})
    at = call("get_shipping_info", {"product_id": "FD-003", "order_total": 99})
    above = call("get_shipping_info", {"product_id": "FD-003", "order_total": 150})
    assert (below["shipping_fee"], at["shipping_fee"], above["shipping_fee"]) == (6.99, 0.0, 0.0)


def test_shipping_fee_moves_with_the_threshold_rule(call: Call, catalog: Catalog) -> None:
    price = _product(catalog, "BE-003").price
    assert 20 <= price < 99
    default = call("get_shipping_info", {"product_id": "BE-003"})
    lowered = call("get_shipping_info", {"product_id": "BE-003"},
                   rules={"free_shipping_threshold": 20})
    assert default["shipping_fee"] == 6.99
    assert lowered["shipping_fee"] == 0.0
    assert lowered["free_shipping_threshold"] == 20.0


def test_shipping_threshold_rule_can_make_a_free_product_pay(call: Call) -> None:
    raised = call("get_shipping_info", {"product_id": "EL-001"},
                  rules={"free_shipping_threshold": 150})
    assert raised["shipping_fee"] == 6.99


def test_shipping_fee_moves_with_the_fee_rule(call: Call) -> None:
    info = call("get_shipping_info", {"product_id": "FD-003"},
                rules={"standard_shipping_fee": 4.5})
    assert info["shipping_fee"] == 4.5


def test_shipping_reports_delivery_days_and_express_fee(call: Call, catalog: Catalog,
                                                        harness: Harness) -> None:
    for product in catalog.products:
        info = call("get_shipping_info", {"product_id": product.id})
        assert info["delivery_days"] == f"{product.shipping.min_days}-{product.shipping.max_days}"
        assert info["ships_from"] == product.shipping.ships_from
        express = float(harness.rules["express_shipping_fee"])
        expected = express if product.shipping.express_available else None
        assert info["express_fee"] == expected, product.id


# --- get_return_policy --------------------------------------------------------------------


def _first_of_class(catalog: Catalog, return_class: str) -> Product:
    return next(p for p in catalog.products if p.return_class == return_class)


@pytest.mark.parametrize(("return_class", "rule", "days"), [
    ("standard", "return_window_days", 30),
    ("extended", "extended_return_days", 60),
    ("electronics", "electronics_return_days", 15),
    ("hygiene", "return_window_days", 30),
    ("final_sale", None, 0),
    ("perishable", None, 0),
])
def test_return_window_per_class_comes_from_the_rules(call: Call, catalog: Catalog, harness: Harness,
                                                      return_class: str, rule: str | None,
                                                      days: int) -> None:
    product = _first_of_class(catalog, return_class)
    policy = call("get_return_policy", {"product_id": product.id})
    assert policy["return_class"] == return_class
    assert policy["return_window_days"] == days
    if rule is not None:
        assert int(harness.rules[rule]) == days


@pytest.mark.parametrize(("return_class", "rule"), [
    ("standard", "return_window_days"),
    ("extended", "extended_return_days"),
    ("electronics", "electronics_return_days"),
])
def test_return_window_moves_with_the_rule(call: Call, catalog: Catalog, return_class: str,
                                           rule: str) -> None:
    product = _first_of_class(catalog, return_class)
    policy = call("get_return_policy", {"product_id": product.id}, rules={rule: 7})
    assert policy["return_window_days"] == 7


def test_final_sale_stays_at_zero_whatever_the_rules(call: Call, catalog: Catalog) -> None:
    product = _first_of_class(catalog, "final_sale")
    policy = call("get_return_policy", {"product_id": product.id},
                  rules={"return_window_days": 90, "extended_return_days": 90})
    assert policy["return_window_days"] == 0
    assert "no returns" in policy["conditions"].lower()


# --- get_size_guide -----------------------------------------------------------------------


def test_size_guide_matches_the_catalog(call: Call, catalog: Catalog) -> None:
    guide = call("get_size_guide", {"product_id": "AP-001"})
    assert guide["size_guide"] == _product(catalog, "AP-001").size_guide
    assert set(guide["size_guide"]) == {"XS", "S", "M", "L", "XL", "XXL"}


def test_size_guide_for_a_product_without_one_raises_lookup_error(call: Call) -> None:
    with pytest.raises(LookupError, match=r"EL-001.*no size guide"):
        call("get_size_guide", {"product_id": "EL-001"})


# --- apply_coupon -------------------------------------------------------------------------


def test_percent_coupon_discount(call: Call, catalog: Catalog) -> None:
    price = _product(catalog, "HM-002").price
    assert price == 179.0
    applied = call("apply_coupon", {"code": "LIVE15", "product_id": "HM-002"})
    assert applied["subtotal"] == 179.0
    assert applied["discount"] == 26.85  # 15% of 179.00
    assert applied["total"] == 152.15


def test_amount_coupon_discount(call: Call, catalog: Catalog) -> None:
    price = _product(catalog, "EL-003").price
    applied = call("apply_coupon", {"code": "TECH25OFF", "product_id": "EL-003"})
    assert applied["discount"] == 25.0
    assert applied["total"] == pytest.approx(price - 25.0)


def test_coupon_subtotal_multiplies_by_quantity(call: Call, catalog: Catalog) -> None:
    price = _product(catalog, "FD-003").price
    applied = call("apply_coupon", {"code": "SNACK5", "product_id": "FD-003", "quantity": 3})
    assert applied["quantity"] == 3
    assert applied["subtotal"] == pytest.approx(3 * price)
    assert applied["total"] == pytest.approx(3 * price - 5.0)


def test_percent_coupon_is_capped_by_max_coupon_percent(call: Call) -> None:
    applied = call("apply_coupon", {"code": "LIVE15", "product_id": "HM-002"},
                   rules={"max_coupon_percent": 10})
    assert applied["discount"] == 17.9  # capped to 10% of 179.00, not 15%
    assert applied["total"] == 161.1


def test_coupon_code_is_case_insensitive(call: Call) -> None:
    applied = call("apply_coupon", {"code": "live15", "product_id": "HM-002"})
    assert applied["code"] == "LIVE15"


def test_expired_coupon_is_refused(call: Call, state: ShopState) -> None:
    with pytest.raises(ValueError, match=r"FALL30.*not valid today"):
        call("apply_coupon", {"code": "FALL30", "product_id": "AP-006"})
    assert state.applied_coupons == []


def test_not_yet_valid_coupon_is_refused(call: Call) -> None:
    with pytest.raises(ValueError, match=r"NEWYEAR20.*not valid today"):
        call("apply_coupon", {"code": "NEWYEAR20", "product_id": "HM-002"})


def test_coupon_for_another_category_is_refused(call: Call, state: ShopState) -> None:
    with pytest.raises(ValueError, match=r"BEAUTY20.*does not apply to electronics"):
        call("apply_coupon", {"code": "BEAUTY20", "product_id": "EL-003"})
    assert state.applied_coupons == []


def test_coupon_below_min_spend_is_refused(call: Call, state: ShopState) -> None:
    with pytest.raises(ValueError, match=r"minimum spend of 25\.00"):
        call("apply_coupon", {"code": "SNACK5", "product_id": "FD-003", "quantity": 2})
    assert state.applied_coupons == []


def test_unknown_coupon_raises_lookup_error(call: Call) -> None:
    with pytest.raises(LookupError, match="NOPE99"):
        call("apply_coupon", {"code": "NOPE99", "product_id": "HM-002"})


def test_applied_coupon_is_recorded_in_the_state(call: Call, state: ShopState) -> None:
    applied = call("apply_coupon", {"code": "LIVE15", "product_id": "HM-002"})
    assert state.applied_coupons == [applied]
    assert state.applied_coupons[0]["code"] == "LIVE15"
    assert state.applied_coupons[0]["product_id"] == "HM-002"


# --- ShopState isolation ------------------------------------------------------------------


def test_state_copies_isolate_coupon_writes(call: Call) -> None:
    base = ShopState()
    first, second = base.copy(), base.copy()
    call("apply_coupon", {"code": "LIVE15", "product_id": "HM-002"}, on=first)
    assert len(first.applied_coupons) == 1
    assert second.applied_coupons == []
    assert base.applied_coupons == []
    assert first.catalog is second.catalog is base.catalog


def test_state_copy_deep_copies_existing_records(call: Call) -> None:
    base = ShopState()
    call("apply_coupon", {"code": "LIVE15", "product_id": "HM-002"}, on=base)
    clone = base.copy()
    clone.applied_coupons[0]["total"] = 0.0
    assert base.applied_coupons[0]["total"] == 152.15
    assert clone.today == base.today == TODAY


# --- escalate_to_human --------------------------------------------------------------------


def test_escalations_get_sequential_ticket_ids(call: Call, state: ShopState) -> None:
    first = call("escalate_to_human", {"reason": "Parcel arrived damaged."})
    second = call("escalate_to_human", {"reason": "Wants a refund."})
    assert (first["ticket"], second["ticket"]) == ("T0001", "T0002")
    assert [e["reason"] for e in state.escalations] == ["Parcel arrived damaged.", "Wants a refund."]


def test_escalation_tickets_restart_per_episode_state(call: Call) -> None:
    call("escalate_to_human", {"reason": "first episode"})
    fresh = call("escalate_to_human", {"reason": "second episode"}, on=ShopState())
    assert fresh["ticket"] == "T0001"


# --- argument validation ------------------------------------------------------------------


def test_missing_required_argument_raises_value_error(call: Call) -> None:
    with pytest.raises(ValueError, match="product_id"):
        call("get_shipping_info", {})


def test_unknown_extra_argument_raises_value_error(call: Call) -> None:
    with pytest.raises(ValueError, match="coupon_code"):
        call("get_shipping_info", {"product_id": "EL-001", "coupon_code": "LIVE15"})


def test_argument_of_wrong_type_raises_value_error(call: Call) -> None:
    with pytest.raises(ValueError, match="max_results"):
        call("search_products", {"query": "hoodie", "max_results": "lots"})


def test_category_outside_the_enum_raises_value_error(call: Call) -> None:
    with pytest.raises(ValueError, match="category"):
        call("search_products", {"query": "hoodie", "category": "toys"})


def test_tools_refuse_a_context_without_shop_state(harness: Harness) -> None:
    ctx = ToolContext(state=object(), rules=harness.rules)
    with pytest.raises(TypeError, match="ShopState"):
        harness.tools["get_product_details"].call({"product_id": "EL-001"}, ctx)


# --- tool metadata and schemas ------------------------------------------------------------


def test_apply_coupon_is_a_write_tool_gated_by_coupon_apply(harness: Harness) -> None:
    spec = harness.tools["apply_coupon"]
    assert spec.kind == "write"
    assert spec.permission == "coupon.apply"
    assert "coupon.apply" not in harness.spec.permissions  # a moderator grants it


def test_escalate_to_human_is_a_write_tool(harness: Harness) -> None:
    spec = harness.tools["escalate_to_human"]
    assert spec.kind == "write"
    assert spec.permission == "support.escalate"
    assert "support.escalate" in harness.spec.permissions


@pytest.mark.parametrize("name", READ_TOOLS)
def test_read_tools_are_kind_read_with_catalog_permission(harness: Harness, name: str) -> None:
    spec = harness.tools[name]
    assert spec.kind == "read"
    assert spec.permission == "catalog.read"


def test_every_enabled_tool_is_loaded(harness: Harness) -> None:
    assert [t.name for t in harness.enabled_tools()] == list(harness.spec.enabled.tools)
    assert set(harness.spec.enabled.tools) == {*READ_TOOLS, "apply_coupon", "escalate_to_human"}


def test_every_enabled_tool_schema_is_well_formed(harness: Harness) -> None:
    for spec in harness.enabled_tools():
        schema = spec.openai_schema()
        assert schema["type"] == "function"
        fn = schema["function"]
        assert fn["name"] == spec.name
        assert fn["description"].strip(), spec.name
        params = fn["parameters"]
        assert params["type"] == "object"
        assert params["additionalProperties"] is False, spec.name
        assert params["properties"], spec.name


def test_tool_context_parameter_is_hidden_from_schemas(harness: Harness) -> None:
    for spec in harness.enabled_tools():
        params = spec.openai_schema()["function"]["parameters"]
        assert spec.context_param == "ctx", spec.name
        assert "ctx" not in params["properties"], spec.name
        assert "ctx" not in params.get("required", []), spec.name


def test_schema_marks_only_parameters_without_defaults_as_required(harness: Harness) -> None:
    def required(name: str) -> set[str]:
        return set(harness.tools[name].openai_schema()["function"]["parameters"].get("required", []))

    assert required("get_shipping_info") == {"product_id"}
    assert required("apply_coupon") == {"code", "product_id"}
    assert required("search_products") == {"query"}


def test_schema_carries_argument_descriptions_from_docstrings(harness: Harness) -> None:
    props = harness.tools["apply_coupon"].openai_schema()["function"]["parameters"]["properties"]
    assert "LIVE15" in props["code"]["description"]
    assert props["quantity"]["default"] == 1
    assert props["quantity"]["type"] == "integer"

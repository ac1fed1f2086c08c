"""The shipped live-commerce catalog: size, coverage, internal consistency, and refusal of bad data."""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest
from pydantic import ValidationError

from hatkit.domains.live_commerce.catalog import Catalog, load_catalog
from hatkit.domains.live_commerce.state import TODAY

CATEGORIES = {"apparel", "beauty", "electronics", "food", "home"}


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture
def raw(catalog: Catalog) -> dict[str, Any]:
    """A private, JSON-shaped copy of the shipped catalog to corrupt."""
    return copy.deepcopy(catalog.model_dump(mode="json"))


def test_catalog_has_at_least_60_products(catalog: Catalog) -> None:
    assert len(catalog.products) >= 60


def test_every_category_has_at_least_10_products(catalog: Catalog) -> None:
    counts = Counter(p.category for p in catalog.products)
    assert set(counts) == CATEGORIES
    assert min(counts.values()) >= 10, counts


def test_product_ids_are_unique_and_prefixed_by_category(catalog: Catalog) -> None:
    ids = [p.id for p in catalog.products]
    assert len(ids) == len(set(ids))
    prefix = {"apparel": "AP-", "beauty": "BE-", "electronics": "EL-", "food": "FD-", "home": "HM-"}
    wrong = [p.id for p in catalog.products if not p.id.startswith(prefix[p.category])]
    assert wrong == []


def test_variant_skus_are_unique_across_the_catalog(catalog: Catalog) -> None:
    skus = [v.sku for p in catalog.products for v in p.variants]
    assert len(skus) == len(set(skus))


def test_coupon_codes_are_unique_and_upper_case(catalog: Catalog) -> None:
    codes = [c.code for c in catalog.coupons]
    assert len(codes) == len(set(codes))
    assert all(code == code.upper() for code in codes)


def test_promotion_ids_are_unique_across_the_catalog(catalog: Catalog) -> None:
    ids = [pr.id for p in catalog.products for pr in p.promotions]
    assert len(ids) == len(set(ids))


def test_every_product_coupon_code_resolves(catalog: Catalog) -> None:
    unresolved = [(p.id, code) for p in catalog.products for code in p.coupon_codes
                  if catalog.coupon(code) is None]
    assert unresolved == []


def test_product_coupons_cover_the_product_category(catalog: Catalog) -> None:
    mismatched = []
    for p in catalog.products:
        for code in p.coupon_codes:
            coupon = catalog.coupon(code)
            assert coupon is not None
            if coupon.categories and p.category not in coupon.categories:
                mismatched.append((p.id, code))
    assert mismatched == []


def test_coupon_lookup_is_case_insensitive(catalog: Catalog) -> None:
    found = catalog.coupon("live15")
    assert found is not None and found.code == "LIVE15"
    assert catalog.coupon("NOPE99") is None


def test_price_is_never_above_list_price(catalog: Catalog) -> None:
    assert [p.id for p in catalog.products if p.price > p.list_price] == []


def test_some_products_are_marked_down(catalog: Catalog) -> None:
    assert any(p.price < p.list_price for p in catalog.products)


def test_every_beauty_product_has_compliance_notes(catalog: Catalog) -> None:
    beauty = [p for p in catalog.products if p.category == "beauty"]
    assert beauty
    assert [p.id for p in beauty if not p.compliance_notes] == []


def test_every_apparel_product_has_a_size_guide(catalog: Catalog) -> None:
    apparel = [p for p in catalog.products if p.category == "apparel"]
    assert apparel
    assert [p.id for p in apparel if not p.size_guide] == []


def test_at_least_one_product_is_fully_sold_out(catalog: Catalog) -> None:
    sold_out = [p for p in catalog.products if p.total_stock == 0]
    assert sold_out
    assert all(v.stock == 0 for p in sold_out for v in p.variants)


def test_total_stock_sums_the_variants(catalog: Catalog) -> None:
    product = catalog.product("AP-001")
    assert product is not None
    assert product.total_stock == sum(v.stock for v in product.variants)
    assert product.total_stock > 0


def test_some_promotion_has_expired_before_today(catalog: Catalog) -> None:
    assert any(pr.valid_to < TODAY for p in catalog.products for pr in p.promotions)


def test_some_promotion_starts_after_today(catalog: Catalog) -> None:
    assert any(pr.valid_from > TODAY for p in catalog.products for pr in p.promotions)


def test_some_promotion_is_valid_today(catalog: Catalog) -> None:
    assert any(pr.valid_from <= TODAY <= pr.valid_to for p in catalog.products for pr in p.promotions)


def test_promotion_and_coupon_windows_are_ordered(catalog: Catalog) -> None:
    assert all(pr.valid_from <= pr.valid_to for p in catalog.products for pr in p.promotions)
    assert all(c.valid_from <= c.valid_to for c in catalog.coupons)


def test_shipping_day_ranges_are_ordered(catalog: Catalog) -> None:
    assert [p.id for p in catalog.products if p.shipping.min_days > p.shipping.max_days] == []


def test_catalog_lookup_of_unknown_product_is_none(catalog: Catalog) -> None:
    assert catalog.product("XX-999") is None
    found = catalog.product("EL-001")
    assert found is not None and found.category == "electronics"


def test_load_catalog_is_cached() -> None:
    assert load_catalog() is load_catalog()


def test_dumped_catalog_round_trips(raw: dict[str, Any], catalog: Catalog) -> None:
    assert Catalog.model_validate(raw) == catalog


def test_price_above_list_price_is_refused(raw: dict[str, Any]) -> None:
    product = raw["products"][0]
    product["price"] = product["list_price"] + 1
    with pytest.raises(ValidationError, match=rf"{product['id']}: price .* above list price"):
        Catalog.model_validate(raw)


def test_unknown_coupon_code_is_refused(raw: dict[str, Any]) -> None:
    product = raw["products"][0]
    product["coupon_codes"] = [*product["coupon_codes"], "BOGUS99"]
    with pytest.raises(ValidationError, match=rf"{product['id']} references unknown coupons.*BOGUS99"):
        Catalog.model_validate(raw)


def test_duplicate_product_id_is_refused(raw: dict[str, Any]) -> None:
    duplicate = copy.deepcopy(raw["products"][0])
    for i, variant in enumerate(duplicate["variants"]):
        variant["sku"] = f"DUP-SKU-{i}"  # only the id collides
    raw["products"].append(duplicate)
    with pytest.raises(ValidationError, match="duplicate product ids"):
        Catalog.model_validate(raw)


def test_duplicate_sku_is_refused(raw: dict[str, Any]) -> None:
    raw["products"][1]["variants"][0]["sku"] = raw["products"][0]["variants"][0]["sku"]
    with pytest.raises(ValidationError, match="duplicate variant SKUs"):
        Catalog.model_validate(raw)


def test_negative_stock_is_refused(raw: dict[str, Any]) -> None:
    raw["products"][0]["variants"][0]["stock"] = -1
    with pytest.raises(ValidationError, match="stock"):
        Catalog.model_validate(raw)


def test_unknown_category_is_refused(raw: dict[str, Any]) -> None:
    raw["products"][0]["category"] = "toys"
    with pytest.raises(ValidationError, match="category"):
        Catalog.model_validate(raw)


def test_product_without_variants_is_refused(raw: dict[str, Any]) -> None:
    raw["products"][0]["variants"] = []
    with pytest.raises(ValidationError, match="variants"):
        Catalog.model_validate(raw)


def test_unexpected_field_is_refused(raw: dict[str, Any]) -> None:
    raw["products"][0]["discount_price"] = 1.0
    with pytest.raises(ValidationError, match="discount_price"):
        Catalog.model_validate(raw)


def test_catalog_records_are_frozen(catalog: Catalog) -> None:
    with pytest.raises(ValidationError):
        catalog.products[0].price = 1.0  # type: ignore[misc]

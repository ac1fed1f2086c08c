"""The live-commerce product catalog: typed records and the loader for the shipped data.

Numbers that business rules decide (free-shipping threshold, return window, shipping fees)
are *not* stored here: they are harness rule parameters, so that a harness change moves the
ground truth with it. The catalog holds only what belongs to a product.
"""

from __future__ import annotations

import json
from datetime import date
from functools import lru_cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Category = Literal["apparel", "beauty", "electronics", "food", "home"]
ReturnClass = Literal["standard", "extended", "hygiene", "electronics", "final_sale", "perishable"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Variant(_Frozen):
    sku: str = Field(description="Stock-keeping unit, unique across the catalog.")
    size: str | None = Field(default=None, description="Size label (S, M, 38, 250ml, ...).")
    color: str | None = Field(default=None, description="Colour or flavour name.")
    stock: int = Field(ge=0, description="Units on hand; 0 means sold out.")


class Promotion(_Frozen):
    id: str = Field(description="Promotion id, unique across the catalog.")
    kind: Literal["percent_off", "amount_off", "bundle", "gift_with_purchase"]
    description: str = Field(description="What a viewer is told, in one sentence.")
    value: float = Field(ge=0, description="Percent for percent_off, currency for amount_off.")
    min_spend: float | None = Field(default=None, ge=0, description="Order total needed.")
    min_quantity: int | None = Field(default=None, ge=1, description="Units needed (bundles).")
    valid_from: date
    valid_to: date


class Coupon(_Frozen):
    code: str = Field(description="Code a viewer types, upper case.")
    description: str
    discount_type: Literal["percent", "amount"]
    value: float = Field(gt=0)
    min_spend: float = Field(default=0, ge=0)
    categories: list[Category] = Field(default_factory=list, description="Empty means all.")
    valid_from: date
    valid_to: date


class Shipping(_Frozen):
    ships_from: str = Field(description="Warehouse city.")
    min_days: int = Field(ge=0, description="Fastest standard delivery, in days.")
    max_days: int = Field(ge=0, description="Slowest standard delivery, in days.")
    express_available: bool = False


class Product(_Frozen):
    id: str = Field(description="Product id such as AP-001 (category prefix + number).")
    name: str
    brand: str
    category: Category
    price: float = Field(gt=0, description="Current selling price in USD.")
    list_price: float = Field(gt=0, description="Regular price before markdown, in USD.")
    description: str
    variants: list[Variant] = Field(min_length=1)
    specs: dict[str, str] = Field(description="Spec name -> value with units.")
    materials: list[str] = Field(default_factory=list)
    shipping: Shipping
    return_class: ReturnClass
    promotions: list[Promotion] = Field(default_factory=list)
    coupon_codes: list[str] = Field(default_factory=list, description="Coupons valid here.")
    compliance_notes: list[str] = Field(default_factory=list, description="What must not be said.")
    size_guide: dict[str, str] | None = Field(default=None, description="Size -> fit advice.")

    @model_validator(mode="after")
    def _price_not_above_list(self) -> Product:
        if self.price > self.list_price:
            raise ValueError(f"{self.id}: price {self.price} is above list price {self.list_price}")
        return self

    @property
    def total_stock(self) -> int:
        return sum(v.stock for v in self.variants)


class Catalog(_Frozen):
    currency: Literal["USD"] = "USD"
    products: list[Product]
    coupons: list[Coupon]

    @model_validator(mode="after")
    def _references_resolve(self) -> Catalog:
        ids = [p.id for p in self.products]
        if len(ids) != len(set(ids)):
            raise ValueError("duplicate product ids")
        skus = [v.sku for p in self.products for v in p.variants]
        if len(skus) != len(set(skus)):
            raise ValueError("duplicate variant SKUs")
        codes = [c.code for c in self.coupons]
        if len(codes) != len(set(codes)):
            raise ValueError("duplicate coupon codes")
        if lower := [c for c in codes if c != c.upper()]:
            raise ValueError(f"coupon codes must be upper case: {lower}")
        promos = [pr.id for p in self.products for pr in p.promotions]
        if len(promos) != len(set(promos)):
            raise ValueError("duplicate promotion ids")
        for p in self.products:
            missing = set(p.coupon_codes) - set(codes)
            if missing:
                raise ValueError(f"{p.id} references unknown coupons {sorted(missing)}")
        return self

    def product(self, product_id: str) -> Product | None:
        return next((p for p in self.products if p.id == product_id), None)

    def coupon(self, code: str) -> Coupon | None:
        return next((c for c in self.coupons if c.code == code.strip().upper()), None)


@lru_cache(maxsize=1)
def load_catalog() -> Catalog:
    """The catalog shipped with hatkit (immutable; cached)."""
    text = resources.files(__package__).joinpath("data/catalog.json").read_text("utf-8")
    return Catalog.model_validate(json.loads(text))

"""Tools of the live-commerce harness. Each reads or writes the episode's ShopState.

Business numbers (fees, thresholds, return windows) come from the harness rules in the
ToolContext, so a harness change changes what the tools answer.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field

from hatkit.domains.live_commerce.state import ShopState
from hatkit.harness import ToolContext, tool

Category = Literal["apparel", "beauty", "electronics", "food", "home"]


def _state(ctx: ToolContext) -> ShopState:
    if not isinstance(ctx.state, ShopState):
        raise TypeError("live_commerce tools need a ShopState in the tool context")
    return ctx.state


_INDEX: dict[int, tuple[object, list[tuple[Any, frozenset[str], frozenset[str]]]]] = {}


def _prefixes(text: str) -> frozenset[str]:
    return frozenset(w[:k] for w in re.findall(r"\w+", text.lower()) for k in range(2, len(w) + 1))


def _search_index(state: ShopState) -> list[tuple[Any, frozenset[str], frozenset[str]]]:
    """Word-prefix sets per product, built once per catalog (search runs thousands of times
    a second in simulation)."""
    cat = state.catalog
    hit = _INDEX.get(id(cat))
    if hit is None or hit[0] is not cat:
        rows = [(p, _prefixes(p.name), _prefixes(" ".join([p.brand, p.description, p.category,
                                                             *p.specs.values()])))
                for p in cat.products]
        hit = _INDEX[id(cat)] = (cat, rows)
    return hit[1]


@tool(permission="catalog.read")
def search_products(ctx: ToolContext, query: str, category: Category | None = None,
                    max_results: Annotated[int, Field(ge=1, le=10)] = 5) -> list[dict[str, Any]]:
    """Find products by id, or by words in their name, brand, description or specs.

    Args:
        query: Words to look for, e.g. "wireless earbuds" or "linen shirt".
        category: Only this category.
        max_results: At most this many results (1-10).
    """
    words = [w for w in re.findall(r"\w+", query.lower()) if len(w) > 1]
    quoted = set(re.findall(r"[a-z]+-\d+", query.lower()))  # ids like "ap-006"
    index = _search_index(_state(ctx))
    quoted &= {p.id.lower() for p, _, _ in index}
    rows = [(p, n, h) for p, n, h in index if not category or p.category == category]
    scored = [(0, p.id, p) for p, _, _ in rows if p.id.lower() in quoted]
    if not quoted:  # a quoted id means that item; otherwise rank by the words
        for p, name_prefixes, hay_prefixes in rows:
            # whole words, or a word's start ("earbud" finds "earbuds", "air" does not find "hair")
            score = sum(w in hay_prefixes for w in words) + 2 * sum(w in name_prefixes for w in words)
            if score:
                scored.append((-score, p.id, p))
    return [
        {"product_id": p.id, "name": p.name, "price": p.price, "in_stock": p.total_stock > 0}
        for _, _, p in sorted(scored)[:max_results]
    ]


@tool(permission="catalog.read")
def get_product_details(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Price, list price, saving, description, specs and materials of one product.

    Args:
        product_id: The product id, e.g. "EL-003".
    """
    p = _state(ctx).product(product_id)
    return {"product_id": p.id, "name": p.name, "brand": p.brand, "category": p.category,
            "price": p.price, "list_price": p.list_price, "saving": round(p.list_price - p.price, 2),
            "description": p.description,
            "specs": p.specs, "materials": p.materials, "compliance_notes": p.compliance_notes,
            "options": sorted({v.size or v.color or v.sku for v in p.variants})}


@tool(permission="catalog.read")
def check_stock(ctx: ToolContext, product_id: str, size: str | None = None,
                color: str | None = None) -> dict[str, Any]:
    """Units in stock per variant (size, colour) of a product.

    Args:
        product_id: The product id.
        size: Only variants of this size.
        color: Only variants of this colour.
    """
    p = _state(ctx).product(product_id)
    rows = [v for v in p.variants
            if (size is None or (v.size or "").lower() == size.lower())
            and (color is None or (v.color or "").lower() == color.lower())]
    return {"product_id": p.id, "name": p.name,
            "variants": [{"sku": v.sku, "size": v.size, "color": v.color, "stock": v.stock}
                         for v in rows],
            "total_in_stock": sum(v.stock for v in rows)}


@tool(permission="catalog.read")
def get_promotions(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Promotions and coupon codes valid today for a product.

    Args:
        product_id: The product id.
    """
    st = _state(ctx)
    p = st.product(product_id)
    promos = [pr.model_dump(mode="json") for pr in p.promotions
              if pr.valid_from <= st.today <= pr.valid_to]
    coupons = [c.model_dump(mode="json") for code in p.coupon_codes
               if (c := st.catalog.coupon(code)) and c.valid_from <= st.today <= c.valid_to]
    return {"product_id": p.id, "price": p.price, "promotions": promos, "coupons": coupons,
            "today": st.today.isoformat()}


@tool(permission="catalog.read")
def get_shipping_info(ctx: ToolContext, product_id: str,
                      order_total: Annotated[float, Field(ge=0)] | None = None) -> dict[str, Any]:
    """Where a product ships from, delivery days, and the shipping fee for an order total.

    Args:
        product_id: The product id.
        order_total: The viewer's order total in USD; default is one unit of the product.
    """
    p = _state(ctx).product(product_id)
    total = p.price if order_total is None else order_total
    threshold = float(ctx.rules["free_shipping_threshold"])
    fee = 0.0 if total >= threshold else float(ctx.rules["standard_shipping_fee"])
    return {"product_id": p.id, "ships_from": p.shipping.ships_from,
            "delivery_days": f"{p.shipping.min_days}-{p.shipping.max_days}",
            "express_available": p.shipping.express_available,
            "express_fee": float(ctx.rules["express_shipping_fee"]) if p.shipping.express_available else None,
            "order_total": total, "free_shipping_threshold": threshold, "shipping_fee": fee}


_RETURNS = {
    "standard": ("return_window_days", "Unused items in original packaging."),
    "extended": ("extended_return_days", "Unused items in original packaging."),
    "electronics": ("electronics_return_days",
                    "Complete with all accessories; defects are covered by warranty."),
    "hygiene": (None, "Unopened items only; opened beauty products cannot be returned."),
    "perishable": (None, "Fresh food cannot be returned; report damaged deliveries within 48 hours."),
    "final_sale": (None, "Final sale: no returns or exchanges."),
}


@tool(permission="catalog.read")
def get_return_policy(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """The return window and conditions that apply to a product.

    Args:
        product_id: The product id.
    """
    p = _state(ctx).product(product_id)
    rule, conditions = _RETURNS[p.return_class]
    days = int(ctx.rules[rule]) if rule else 0
    if p.return_class == "hygiene":
        days = int(ctx.rules["return_window_days"])
    return {"product_id": p.id, "return_class": p.return_class, "return_window_days": days,
            "conditions": conditions}


@tool(permission="catalog.read")
def get_size_guide(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Fit advice and measurements per size, for apparel and shoes.

    Args:
        product_id: The product id.
    """
    p = _state(ctx).product(product_id)
    if not p.size_guide:
        raise LookupError(f"{p.id} ({p.name}) has no size guide")
    return {"product_id": p.id, "name": p.name, "size_guide": p.size_guide}


@tool(kind="write", permission="coupon.apply")
def apply_coupon(ctx: ToolContext, code: str, product_id: str,
                 quantity: Annotated[int, Field(ge=1, le=99)] = 1) -> dict[str, Any]:
    """Apply a coupon code to the viewer's order of a product and return the new total.

    Args:
        code: The coupon code, e.g. "LIVE15".
        product_id: The product id.
        quantity: Units ordered.
    """
    st = _state(ctx)
    p = st.product(product_id)
    c = st.catalog.coupon(code)
    if c is None:
        raise LookupError(f"coupon '{code}' does not exist")
    if not c.valid_from <= st.today <= c.valid_to:
        raise ValueError(f"coupon '{c.code}' is not valid today ({st.today.isoformat()})")
    if c.categories and p.category not in c.categories:
        raise ValueError(f"coupon '{c.code}' does not apply to {p.category}")
    subtotal = round(p.price * quantity, 2)
    if subtotal < c.min_spend:
        raise ValueError(f"coupon '{c.code}' needs a minimum spend of {c.min_spend:.2f}")
    pct = min(c.value, float(ctx.rules["max_coupon_percent"])) if c.discount_type == "percent" else None
    discount = round(subtotal * pct / 100, 2) if pct is not None else min(c.value, subtotal)
    applied = {"code": c.code, "product_id": p.id, "quantity": quantity,
               "subtotal": subtotal, "discount": discount, "total": round(subtotal - discount, 2)}
    st.applied_coupons.append(applied)
    return applied


@tool(kind="write", permission="support.escalate")
def escalate_to_human(ctx: ToolContext, reason: str) -> dict[str, Any]:
    """Hand the conversation to a human agent (complaints, refunds, anything you cannot resolve).

    Args:
        reason: One sentence on why a human is needed.
    """
    st = _state(ctx)
    ticket = f"T{len(st.escalations) + 1:04d}"
    st.escalations.append({"ticket": ticket, "reason": reason})
    return {"ticket": ticket, "status": "a human agent will reply in chat shortly"}

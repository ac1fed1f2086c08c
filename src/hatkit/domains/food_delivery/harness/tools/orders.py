"""Tools of the food-delivery harness. Each reads or writes the episode's FoodState.

Business numbers (fees, the free-delivery threshold, compensation for a delay, caps, the
refund window) come from the harness rules in the ToolContext, so a harness change changes
what the tools answer. Every money value is rounded to cents.
"""

from __future__ import annotations

from typing import Any

from hatkit.domains.food_delivery.state import FoodState
from hatkit.domains.food_delivery.world import Order
from hatkit.harness import ToolContext, tool


def _state(ctx: ToolContext) -> FoodState:
    if not isinstance(ctx.state, FoodState):
        raise TypeError("food_delivery tools need a FoodState in the tool context")
    return ctx.state


def _money(x: float) -> float:
    return round(float(x), 2) + 0.0  # + 0.0 turns -0.0 into 0.0


def _num(ctx: ToolContext, rule: str) -> float:
    return float(ctx.rules[rule])


def _zone(zone: str) -> str:
    z = zone.strip().upper().removeprefix("ZONE").strip()
    if z not in ("A", "B"):
        raise ValueError(f"unknown zone '{zone}'; zones are A and B")
    return z


def _fee(ctx: ToolContext, zone: str, subtotal: float) -> float:
    if subtotal >= _num(ctx, "free_delivery_threshold"):
        return 0.0
    surcharge = _num(ctx, "zone_b_surcharge") if zone == "B" else 0.0
    return _money(_num(ctx, "base_delivery_fee") + surcharge)


def _subtotal(st: FoodState, order: Order) -> float:
    menu = st.world.restaurant_of(order)
    return _money(sum(menu.item(line.item_id).price * line.qty for line in order.items))


def _total(ctx: ToolContext, st: FoodState, order: Order) -> float:
    subtotal = _subtotal(st, order)
    return _money(subtotal + _fee(ctx, order.zone, subtotal))


def _timing(st: FoodState, order: Order) -> dict[str, Any]:
    """minutes_since_order, eta_minutes, delay_minutes (and delivered_minutes_ago)."""
    since = st.minutes_since_order(order)
    out: dict[str, Any] = {"minutes_since_order": since, "eta_minutes": None, "delay_minutes": 0}
    if order.status in ("preparing", "on_the_way"):
        late = since > order.promised_minutes
        out["eta_minutes"] = 10 if late else max(5, order.promised_minutes - since)
        out["delay_minutes"] = max(0, since - order.promised_minutes)
    elif order.status == "delivered":
        after = order.delivered_after_minutes or 0
        out["delay_minutes"] = max(0, after - order.promised_minutes)
        out["delivered_minutes_ago"] = since - after
    return out


def _policy(ctx: ToolContext, st: FoodState, order: Order) -> dict[str, Any]:
    timing = _timing(st, order)
    delay = int(timing["delay_minutes"])
    delivered = order.status == "delivered"
    voucher = fee_refund = 0.0
    window_open = False
    note = None
    if delivered:
        if delay >= _num(ctx, "late_minutes_large"):
            voucher = _money(_num(ctx, "voucher_large"))
            fee_refund = _fee(ctx, order.zone, _subtotal(st, order))
        elif delay >= _num(ctx, "late_minutes_small"):
            voucher = _money(_num(ctx, "voucher_small"))
        hours = _num(ctx, "refund_window_hours")
        window_open = int(timing["delivered_minutes_ago"]) <= hours * 60
        if not window_open:
            note = (f"the {hours:g}-hour refund window closed; the order was delivered "
                    f"{int(timing['delivered_minutes_ago']) // 60} hours ago")
    elif order.status == "cancelled":
        note = "cancelled orders are refunded automatically to the original payment method"
    else:
        note = "the order is not delivered yet; compensation and refunds are decided once it arrives"
    return {"order_id": order.id, "delay_minutes": delay, "voucher": voucher,
            "delivery_fee_refund": fee_refund, "refund_window_open": window_open,
            "refund_cap": _money(_num(ctx, "refund_cap")),
            "voucher_cap": _money(_num(ctx, "voucher_cap")), "note": note}


@tool(permission="orders.read")
def find_order(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """An order's restaurant, items with unit prices, subtotal, delivery fee, total, zone and status.

    Args:
        order_id: The order id, e.g. "FD-1012".
    """
    st = _state(ctx)
    order = st.order(order_id)
    restaurant = st.world.restaurant_of(order)
    subtotal = _subtotal(st, order)
    fee = _fee(ctx, order.zone, subtotal)
    items = [{"item_id": line.item_id, "name": (item := restaurant.item(line.item_id)).name,
              "qty": line.qty, "price": item.price} for line in order.items]
    return {"order_id": order.id, "restaurant_id": restaurant.id, "restaurant": restaurant.name,
            "items": items, "subtotal": subtotal, "delivery_fee": fee,
            "total": _money(subtotal + fee), "zone": order.zone, "status": order.status}


@tool(permission="orders.read")
def delivery_status(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """Where an order is: status, promised minutes, minutes since ordering, ETA, delay and courier.

    A late order that has not arrived is re-estimated at 10 minutes.

    Args:
        order_id: The order id, e.g. "FD-1012".
    """
    st = _state(ctx)
    order = st.order(order_id)
    timing = _timing(st, order)
    out: dict[str, Any] = {"order_id": order.id, "status": order.status,
                           "promised_minutes": order.promised_minutes,
                           "minutes_since_order": timing["minutes_since_order"],
                           "eta_minutes": timing["eta_minutes"], "delay_minutes": timing["delay_minutes"],
                           "courier": order.courier if order.status == "on_the_way" else None}
    if order.status == "delivered":
        out["delivered_minutes_ago"] = timing["delivered_minutes_ago"]
    return out


@tool(permission="menu.read")
def get_menu(ctx: ToolContext, restaurant: str) -> dict[str, Any]:
    """A restaurant's dishes with prices, listed allergens and whether each is vegetarian.

    Args:
        restaurant: The restaurant's id (e.g. "R03"), English name or Chinese name.
    """
    r = _state(ctx).restaurant(restaurant)
    return {"restaurant_id": r.id, "name": r.name, "cuisine": r.cuisine, "zone": r.zone,
            "items": [{"item_id": i.id, "name": i.name, "price": i.price,
                       "allergens": list(i.allergens), "vegetarian": i.vegetarian} for i in r.menu]}


@tool(permission="orders.read")
def compensation_policy(ctx: ToolContext, order_id: str) -> dict[str, Any]:
    """What a late order is owed (voucher, delivery-fee refund), if its refund window is open, and caps.

    Args:
        order_id: The order id, e.g. "FD-1012".
    """
    st = _state(ctx)
    return _policy(ctx, st, st.order(order_id))


@tool(permission="menu.read")
def service_fee(ctx: ToolContext, zone: str, subtotal: float) -> dict[str, Any]:
    """The delivery fee for a food subtotal in a delivery zone.

    Args:
        zone: The delivery zone, "A" or "B".
        subtotal: The food subtotal in USD.
    """
    z = _zone(zone)
    if subtotal < 0:
        raise ValueError(f"subtotal must not be negative (got {subtotal})")
    return {"zone": z, "subtotal": _money(subtotal), "delivery_fee": _fee(ctx, z, subtotal),
            "free_delivery_threshold": _money(_num(ctx, "free_delivery_threshold"))}


@tool(kind="write", permission="vouchers.issue")
def issue_voucher(ctx: ToolContext, order_id: str, amount: float) -> dict[str, Any]:
    """Give the customer a voucher for a late order, up to what compensation_policy allows.

    Args:
        order_id: The order id, e.g. "FD-1012".
        amount: Voucher value in USD.
    """
    st = _state(ctx)
    order = st.order(order_id)
    amount = _money(amount)
    cap = _num(ctx, "voucher_cap")
    if amount <= 0:
        raise ValueError(f"a voucher amount must be positive (got {amount:.2f})")
    if amount > cap:
        raise ValueError(f"a voucher can be at most ${cap:.2f} (asked ${amount:.2f})")
    policy = _policy(ctx, st, order)
    allowed = float(policy["voucher"])
    if allowed <= 0:
        why = policy["note"] if order.status != "delivered" else (
            f"it was {policy['delay_minutes']} minutes late, under the "
            f"{_num(ctx, 'late_minutes_small'):g}-minute threshold")
        raise ValueError(f"order {order.id} qualifies for no voucher: {why}")
    given = _money(sum(v["amount"] for v in st.vouchers if v["order_id"] == order.id))
    if _money(given + amount) > allowed:
        already = f"; ${given:.2f} was already issued" if given else ""
        raise ValueError(f"order {order.id} qualifies for a voucher of at most ${allowed:.2f}"
                         f"{already} (asked ${amount:.2f})")
    issued = {"order_id": order.id, "amount": amount,
              "code": f"V-{order.number}-{round(amount * 100)}"}
    st.vouchers.append(dict(issued))
    return issued


@tool(kind="write", permission="refunds.issue")
def issue_refund(ctx: ToolContext, order_id: str, amount: float, reason: str) -> dict[str, Any]:
    """Refund money for a delivered order to the customer's payment method (within window and caps).

    Args:
        order_id: The order id, e.g. "FD-1012".
        amount: Refund in USD.
        reason: One sentence on why, e.g. "food arrived cold".
    """
    st = _state(ctx)
    order = st.order(order_id)
    amount = _money(amount)
    if amount <= 0:
        raise ValueError(f"a refund amount must be positive (got {amount:.2f})")
    policy = _policy(ctx, st, order)
    if not policy["refund_window_open"]:
        raise ValueError(f"order {order.id} cannot be refunded: {policy['note']}")
    cap, total = _num(ctx, "refund_cap"), _total(ctx, st, order)
    refunded = _money(sum(r["amount"] for r in st.refunds if r["order_id"] == order.id))
    already = f"; ${refunded:.2f} was already refunded" if refunded else ""
    if _money(refunded + amount) > cap:
        raise ValueError(f"a refund can be at most ${cap:.2f} per order{already} (asked ${amount:.2f})")
    if _money(refunded + amount) > total:
        raise ValueError(f"order {order.id} totals ${total:.2f}{already}; cannot refund ${amount:.2f}")
    refund = {"order_id": order.id, "amount": amount, "refund_id": f"RF-{len(st.refunds) + 1}"}
    st.refunds.append({**refund, "reason": reason})
    return refund


@tool(kind="write", permission="support.escalate")
def escalate_to_agent(ctx: ToolContext, reason: str, order_id: str | None = None) -> dict[str, Any]:
    """Hand the conversation to a human support agent (refunds, complaints, anything you cannot resolve).

    Args:
        reason: One sentence on why a person is needed.
        order_id: The order it is about, if any, e.g. "FD-1012".
    """
    st = _state(ctx)
    oid = st.order(order_id).id if order_id else None
    ticket = f"T-{len(st.escalations) + 1}"
    st.escalations.append({"ticket": ticket, "reason": reason, "order_id": oid})
    return {"ticket": ticket, "eta": "a person replies within 10 minutes"}

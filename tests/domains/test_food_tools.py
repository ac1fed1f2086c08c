"""The food-delivery world, state, tools and default harness: answers come from the world and move
with the harness rules; hooks catch unbacked ETA/money claims and allergy assurances."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from hatkit.agent import Agent, InlineToolRunner
from hatkit.domains.food_delivery.state import FoodState
from hatkit.domains.food_delivery.world import NOW, World, load_world
from hatkit.harness import Harness, PreReplyEvent, PreToolEvent, ToolContext, load_harness
from hatkit.harness.hooks import ClaimRequiresTool, ForbiddenPhrases, MaxReplyLength, ToolPermission
from hatkit.models.scripted import ScriptedModel

HARNESS_DIR = Path(__file__).resolve().parents[2] / "src/hatkit/domains/food_delivery/harness"
DEFAULT_PERMS = frozenset({"orders.read", "menu.read", "vouchers.issue", "support.escalate"})
REFUND_PERMS = DEFAULT_PERMS | {"refunds.issue"}
READ_TOOLS = {"find_order": "orders.read", "delivery_status": "orders.read", "get_menu": "menu.read",
              "compensation_policy": "orders.read", "service_fee": "menu.read"}
WRITE_TOOLS = {"issue_voucher": "vouchers.issue", "issue_refund": "refunds.issue",
               "escalate_to_agent": "support.escalate"}

Call = Callable[..., Any]


@pytest.fixture(scope="module")
def harness() -> Harness:
    return load_harness(HARNESS_DIR)


@pytest.fixture(scope="module")
def world() -> World:
    return load_world()


@pytest.fixture
def state() -> FoodState:
    return FoodState()


@pytest.fixture
def call(harness: Harness, state: FoodState) -> Call:
    """Call a tool by name against `state` (default: this test's) and the harness rules, with
    `rules` entries overriding the shipped ones; `perms` defaults to the harness's grant plus
    refunds.issue (permission checks are the runtime's, tested through the agent below)."""

    def _call(name: str, arguments: Mapping[str, Any], *, rules: Mapping[str, Any] | None = None,
              on: FoodState | None = None, perms: frozenset[str] = REFUND_PERMS) -> Any:
        ctx = ToolContext(state=state if on is None else on,
                          rules={**harness.rules, **(rules or {})}, permissions=perms)
        return harness.tools[name].call(arguments, ctx)

    return _call


# --- the world ----------------------------------------------------------------------------------


def test_world_has_8_restaurants_in_two_zones_and_40_orders(world: World) -> None:
    assert [r.id for r in world.restaurants] == [f"R0{i}" for i in range(1, 9)]
    assert {r.id for r in world.restaurants if r.zone == "B"} == {"R06", "R07", "R08"}
    assert all(5 <= len(r.menu) <= 7 for r in world.restaurants)
    assert [o.id for o in world.orders] == [f"FD-{n}" for n in range(1001, 1041)]
    assert all(o.zone == world.restaurant(o.restaurant_id).zone for o in world.orders)


def test_world_order_mix(world: World, call: Call) -> None:
    assert Counter(o.status for o in world.orders) == {
        "delivered": 29, "on_the_way": 6, "preparing": 3, "cancelled": 2}
    buckets: Counter[str] = Counter()
    for o in world.orders:
        if o.status != "delivered":
            continue
        out = call("delivery_status", {"order_id": o.id})
        delay = out["delay_minutes"]
        if out["delivered_minutes_ago"] > 1440:
            buckets["long_ago"] += 1
        else:
            buckets["late_40+" if delay >= 40 else "late_15-39" if delay >= 15 else "on_time"] += 1
    assert buckets == {"on_time": 10, "late_15-39": 8, "late_40+": 6, "long_ago": 5}
    assert sum(1 for o in world.orders if o.status == "on_the_way"
               and call("delivery_status", {"order_id": o.id})["delay_minutes"] > 0) == 3


def test_menu_items_have_two_decimal_prices_and_known_allergens(world: World) -> None:
    items = [i for r in world.restaurants for i in r.menu]
    assert all(round(i.price, 2) == i.price > 0 for i in items)
    assert any(not i.allergens for i in items)
    assert any(i.vegetarian for i in items) and any(not i.vegetarian for i in items)


def test_world_is_loaded_once_and_immutable(world: World) -> None:
    assert load_world() is world
    with pytest.raises(ValidationError):
        world.orders[0].status = "cancelled"  # type: ignore[misc]


def test_world_rejects_an_order_in_the_wrong_zone(world: World) -> None:
    data = world.model_dump(mode="json")
    data["orders"][0]["zone"] = "B"  # FD-1001 is from R01, zone A
    with pytest.raises(ValidationError, match="FD-1001: zone B"):
        World.model_validate(data)


def test_world_rejects_a_delivered_order_without_a_delivery_time(world: World) -> None:
    data = world.model_dump(mode="json")
    data["orders"][0]["delivered_after_minutes"] = None
    with pytest.raises(ValidationError, match="delivered_after_minutes"):
        World.model_validate(data)


@pytest.mark.parametrize("ref", ["R08", "r08", "Pho Saigon", "pho saigon", "西贡河粉"])
def test_restaurant_lookup_by_id_english_or_chinese_name(world: World, ref: str) -> None:
    assert world.restaurant(ref).id == "R08"


def test_unknown_restaurant_lists_the_restaurants(world: World) -> None:
    with pytest.raises(LookupError, match=r"no restaurant 'Noma'; restaurants are: R01 Golden Dragon"):
        world.restaurant("Noma")


# --- find_order ---------------------------------------------------------------------------------


def test_find_order_items_subtotal_fee_and_total(call: Call) -> None:
    out = call("find_order", {"order_id": "FD-1001"})
    assert out == {
        "order_id": "FD-1001", "restaurant_id": "R01", "restaurant": "Golden Dragon",
        "items": [{"item_id": "R01-1", "name": "Kung Pao Chicken", "qty": 1, "price": 13.5},
                  {"item_id": "R01-4", "name": "Egg Fried Rice", "qty": 1, "price": 8.0}],
        "subtotal": 21.5, "delivery_fee": 2.99, "total": 24.49, "zone": "A", "status": "delivered"}


def test_find_order_multiplies_quantities_and_rounds_to_cents(call: Call) -> None:
    out = call("find_order", {"order_id": "FD-1004"})  # 2 x 11.99 + 3.99 + 5.49
    assert (out["subtotal"], out["delivery_fee"], out["total"]) == (33.46, 2.99, 36.45)


@pytest.mark.parametrize(("order_id", "zone", "subtotal", "fee", "total"), [
    ("FD-1005", "B", 18.5, 4.49, 22.99),   # zone B pays the surcharge
    ("FD-1006", "A", 35.0, 0.0, 35.0),     # exactly at the threshold: free
    ("FD-1033", "B", 35.0, 0.0, 35.0),     # zone B at the threshold: free too
    ("FD-1037", "A", 43.45, 0.0, 43.45),   # above the threshold
])
def test_find_order_delivery_fee_per_zone_and_threshold(call: Call, order_id: str, zone: str,
                                                        subtotal: float, fee: float, total: float) -> None:
    out = call("find_order", {"order_id": order_id})
    assert (out["zone"], out["subtotal"], out["delivery_fee"], out["total"]) == (zone, subtotal, fee, total)


def test_find_order_fee_moves_with_the_rules(call: Call) -> None:
    out = call("find_order", {"order_id": "FD-1005"},
               rules={"base_delivery_fee": 1.99, "zone_b_surcharge": 2.0})
    assert (out["delivery_fee"], out["total"]) == (3.99, 22.49)
    assert call("find_order", {"order_id": "FD-1006"},
                rules={"free_delivery_threshold": 40})["delivery_fee"] == 2.99


@pytest.mark.parametrize("ref", ["fd-1012", " FD-1012 ", "1012", "FD1012", "#1012"])
def test_order_ids_are_normalised(call: Call, ref: str) -> None:
    assert call("find_order", {"order_id": ref})["order_id"] == "FD-1012"


@pytest.mark.parametrize("tool", ["find_order", "delivery_status", "compensation_policy"])
def test_unknown_order_raises_lookup_error_with_the_id_format(call: Call, tool: str) -> None:
    with pytest.raises(LookupError, match=r"^no order 'FD-9999'; order ids look like FD-1001$"):
        call(tool, {"order_id": "FD-9999"})


# --- delivery_status ----------------------------------------------------------------------------


def test_status_of_an_order_delivered_on_time(call: Call) -> None:
    assert call("delivery_status", {"order_id": "FD-1003"}) == {
        "order_id": "FD-1003", "status": "delivered", "promised_minutes": 30,
        "minutes_since_order": 300, "eta_minutes": None, "delay_minutes": 0, "courier": None,
        "delivered_minutes_ago": 270}


@pytest.mark.parametrize(("order_id", "delay", "ago"), [
    ("FD-1009", 10, 155),    # a little late, below the small threshold
    ("FD-1012", 25, 100),    # late small
    ("FD-1020", 55, 110),    # late large
    ("FD-1029", 0, 10042),   # a week ago
])
def test_status_of_delivered_orders_reports_delay_and_age(call: Call, order_id: str, delay: int,
                                                          ago: int) -> None:
    out = call("delivery_status", {"order_id": order_id})
    assert (out["delay_minutes"], out["delivered_minutes_ago"], out["eta_minutes"]) == (delay, ago, None)


@pytest.mark.parametrize(("order_id", "status", "eta", "delay", "courier"), [
    ("FD-1030", "on_the_way", 15, 0, "Li Wei"),      # 20 of 35 minutes gone
    ("FD-1031", "on_the_way", 5, 0, "Marco Rossi"),  # 5 left: the floor
    ("FD-1032", "on_the_way", 5, 0, "Ana López"),    # exactly at the promise: not late yet
    ("FD-1033", "on_the_way", 10, 15, "Raj Patel"),  # late: re-estimated at 10
    ("FD-1034", "on_the_way", 10, 50, "Kenji Sato"),
    ("FD-1036", "preparing", 25, 0, None),
    ("FD-1037", "preparing", 33, 0, None),
    ("FD-1038", "preparing", 10, 20, None),          # still in the kitchen and late
    ("FD-1039", "cancelled", None, 0, None),
])
def test_status_of_open_and_cancelled_orders(call: Call, order_id: str, status: str, eta: int | None,
                                             delay: int, courier: str | None) -> None:
    out = call("delivery_status", {"order_id": order_id})
    assert (out["status"], out["eta_minutes"], out["delay_minutes"], out["courier"]) == (
        status, eta, delay, courier)
    assert "delivered_minutes_ago" not in out


def test_status_follows_the_state_clock(call: Call) -> None:
    later = FoodState(now=NOW + timedelta(minutes=10))
    out = call("delivery_status", {"order_id": "FD-1030"}, on=later)
    assert (out["minutes_since_order"], out["eta_minutes"], out["delay_minutes"]) == (30, 5, 0)
    out = call("delivery_status", {"order_id": "FD-1031"}, on=later)  # 40 of 35 minutes
    assert (out["eta_minutes"], out["delay_minutes"]) == (10, 5)


# --- get_menu -----------------------------------------------------------------------------------


def test_menu_lists_prices_allergens_and_vegetarian_flags(call: Call) -> None:
    out = call("get_menu", {"restaurant": "R01"})
    assert (out["restaurant_id"], out["name"], out["cuisine"], out["zone"]) == (
        "R01", "Golden Dragon", "Chinese", "A")
    items = {i["item_id"]: i for i in out["items"]}
    assert items["R01-1"] == {"item_id": "R01-1", "name": "Kung Pao Chicken", "price": 13.5,
                              "allergens": ["peanut", "soy"], "vegetarian": False}
    assert items["R01-6"]["allergens"] == [] and items["R01-6"]["vegetarian"] is True


@pytest.mark.parametrize("ref", ["樱花寿司", "Sakura Sushi", "SAKURA SUSHI", "r03"])
def test_menu_by_chinese_or_english_name(call: Call, ref: str) -> None:
    out = call("get_menu", {"restaurant": ref})
    assert out["restaurant_id"] == "R03" and len(out["items"]) == 6
    assert out["items"][1]["allergens"] == ["shellfish", "egg", "sesame", "soy"]


def test_menu_of_a_zone_b_restaurant_by_chinese_name(call: Call) -> None:
    out = call("get_menu", {"restaurant": "西贡河粉"})
    assert (out["restaurant_id"], out["zone"]) == ("R08", "B")


def test_menu_of_unknown_restaurant_raises_lookup_error(call: Call) -> None:
    with pytest.raises(LookupError, match="no restaurant '麦当劳'"):
        call("get_menu", {"restaurant": "麦当劳"})


# --- compensation_policy ------------------------------------------------------------------------


@pytest.mark.parametrize(("order_id", "delay", "voucher", "fee_refund"), [
    ("FD-1001", 0, 0.0, 0.0),
    ("FD-1010", 14, 0.0, 0.0),    # one minute under the small threshold
    ("FD-1011", 15, 5.0, 0.0),    # exactly the small threshold
    ("FD-1014", 39, 5.0, 0.0),    # one minute under the large threshold
    ("FD-1019", 40, 10.0, 2.99),  # exactly the large threshold: the zone A fee back
    ("FD-1021", 65, 10.0, 4.49),  # zone B fee back
    ("FD-1022", 85, 10.0, 0.0),   # delivery was free: nothing to refund
])
def test_compensation_by_delay(call: Call, order_id: str, delay: int, voucher: float,
                               fee_refund: float) -> None:
    out = call("compensation_policy", {"order_id": order_id})
    assert (out["delay_minutes"], out["voucher"], out["delivery_fee_refund"]) == (delay, voucher, fee_refund)
    assert (out["refund_cap"], out["voucher_cap"]) == (30.0, 15.0)
    assert out["refund_window_open"] is True and out["note"] is None


@pytest.mark.parametrize(("order_id", "open_"), [
    ("FD-1024", True),   # delivered 1310 minutes ago
    ("FD-1007", True),   # delivered exactly 24 hours ago
    ("FD-1028", False),  # 1470 minutes ago
    ("FD-1025", False),
    ("FD-1029", False),
])
def test_refund_window_is_24_hours_from_delivery(call: Call, order_id: str, open_: bool) -> None:
    out = call("compensation_policy", {"order_id": order_id})
    assert out["refund_window_open"] is open_
    assert (out["note"] is None) is open_


def test_long_ago_late_order_keeps_its_voucher_but_not_its_refund_window(call: Call) -> None:
    out = call("compensation_policy", {"order_id": "FD-1026"})
    assert (out["delay_minutes"], out["voucher"], out["delivery_fee_refund"]) == (45, 10.0, 2.99)
    assert out["refund_window_open"] is False
    assert "24-hour refund window closed" in out["note"] and "47 hours ago" in out["note"]


def test_cancelled_orders_are_refunded_automatically(call: Call) -> None:
    out = call("compensation_policy", {"order_id": "FD-1039"})
    assert (out["voucher"], out["delivery_fee_refund"], out["refund_window_open"]) == (0.0, 0.0, False)
    assert "refunded automatically" in out["note"]


def test_undelivered_late_order_gets_no_compensation_yet(call: Call) -> None:
    out = call("compensation_policy", {"order_id": "FD-1034"})
    assert out["delay_minutes"] == 50
    assert (out["voucher"], out["delivery_fee_refund"], out["refund_window_open"]) == (0.0, 0.0, False)
    assert "not delivered yet" in out["note"]


def test_compensation_moves_with_the_rules(call: Call) -> None:
    rules = {"late_minutes_small": 10, "late_minutes_large": 30, "voucher_small": 3, "voucher_large": 8,
             "refund_window_hours": 48}
    assert call("compensation_policy", {"order_id": "FD-1009"}, rules=rules)["voucher"] == 3.0
    out = call("compensation_policy", {"order_id": "FD-1015"}, rules=rules)  # 30 minutes late
    assert (out["voucher"], out["delivery_fee_refund"]) == (8.0, 2.99)
    assert call("compensation_policy", {"order_id": "FD-1028"}, rules=rules)["refund_window_open"] is True
    assert call("compensation_policy", {"order_id": "FD-1024"},
                rules={"refund_window_hours": 12})["refund_window_open"] is False


# --- service_fee --------------------------------------------------------------------------------


@pytest.mark.parametrize(("zone", "subtotal", "fee"), [
    ("A", 20, 2.99), ("B", 20, 4.49), ("b", 34.99, 4.49), ("A", 35, 0.0), ("B", 35, 0.0),
    ("zone B", 50.5, 0.0), ("A", 0, 2.99),
])
def test_service_fee_per_zone_and_threshold(call: Call, zone: str, subtotal: float, fee: float) -> None:
    out = call("service_fee", {"zone": zone, "subtotal": subtotal})
    assert out == {"zone": zone[-1].upper(), "subtotal": float(subtotal), "delivery_fee": fee,
                   "free_delivery_threshold": 35.0}


def test_service_fee_moves_with_the_rules(call: Call) -> None:
    out = call("service_fee", {"zone": "B", "subtotal": 32},
               rules={"free_delivery_threshold": 30})
    assert (out["delivery_fee"], out["free_delivery_threshold"]) == (0.0, 30.0)
    assert call("service_fee", {"zone": "B", "subtotal": 10},
                rules={"zone_b_surcharge": 0.75})["delivery_fee"] == 3.74


def test_service_fee_refuses_an_unknown_zone_or_negative_subtotal(call: Call) -> None:
    with pytest.raises(ValueError, match="unknown zone 'C'; zones are A and B"):
        call("service_fee", {"zone": "C", "subtotal": 10})
    with pytest.raises(ValueError, match="negative"):
        call("service_fee", {"zone": "A", "subtotal": -1})


# --- issue_voucher ------------------------------------------------------------------------------


def test_voucher_for_a_late_order_is_issued_and_recorded(call: Call, state: FoodState) -> None:
    out = call("issue_voucher", {"order_id": "fd-1012", "amount": 5})
    assert out == {"order_id": "FD-1012", "amount": 5.0, "code": "V-1012-500"}
    assert state.vouchers == [out]


def test_voucher_code_carries_cents(call: Call) -> None:
    assert call("issue_voucher", {"order_id": "FD-1019", "amount": 4.5})["code"] == "V-1019-450"


@pytest.mark.parametrize(("order_id", "amount", "why"), [
    ("FD-1012", 10, r"at most \$5\.00 \(asked \$10\.00\)"),         # above the policy's voucher
    ("FD-1019", 20, r"at most \$15\.00 \(asked \$20\.00\)"),         # above the cap
    ("FD-1019", 0, "must be positive"),
    ("FD-1012", -5, "must be positive"),
    ("FD-1010", 5, "14 minutes late, under the 15-minute threshold"),  # not late enough
    ("FD-1034", 5, "not delivered yet"),
    ("FD-1039", 5, "refunded automatically"),
])
def test_voucher_refusals(call: Call, state: FoodState, order_id: str, amount: float, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        call("issue_voucher", {"order_id": order_id, "amount": amount})
    assert state.vouchers == []


def test_vouchers_for_one_order_add_up_to_the_policy_at_most(call: Call, state: FoodState) -> None:
    call("issue_voucher", {"order_id": "FD-1019", "amount": 6})
    with pytest.raises(ValueError, match=r"\$6\.00 was already issued"):
        call("issue_voucher", {"order_id": "FD-1019", "amount": 5})
    call("issue_voucher", {"order_id": "FD-1019", "amount": 4})
    assert [v["amount"] for v in state.vouchers] == [6.0, 4.0]


def test_voucher_cap_moves_with_the_rules(call: Call) -> None:
    with pytest.raises(ValueError, match=r"at most \$8\.00"):
        call("issue_voucher", {"order_id": "FD-1019", "amount": 10}, rules={"voucher_cap": 8})


# --- issue_refund -------------------------------------------------------------------------------


def test_refund_within_window_and_caps_is_issued_and_recorded(call: Call, state: FoodState) -> None:
    out = call("issue_refund", {"order_id": "FD-1012", "amount": 12.5, "reason": "food arrived cold"})
    assert out == {"order_id": "FD-1012", "amount": 12.5, "refund_id": "RF-1"}
    assert state.refunds == [{**out, "reason": "food arrived cold"}]
    second = call("issue_refund", {"order_id": "FD-1020", "amount": 15.99, "reason": "wrong dish"})
    assert second["refund_id"] == "RF-2"  # the whole total of FD-1020 is allowed


@pytest.mark.parametrize(("order_id", "amount", "why"), [
    ("FD-1022", 31, r"at most \$30\.00 per order"),        # total 37.50, above the cap
    ("FD-1020", 20, r"totals \$15\.99; cannot refund \$20\.00"),  # under the cap, above the total
    ("FD-1025", 5, "24-hour refund window closed"),
    ("FD-1028", 5, "24-hour refund window closed"),          # 1470 minutes: just past it
    ("FD-1039", 5, "refunded automatically"),
    ("FD-1030", 5, "not delivered yet"),
    ("FD-1012", 0, "must be positive"),
])
def test_refund_refusals(call: Call, state: FoodState, order_id: str, amount: float, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        call("issue_refund", {"order_id": order_id, "amount": amount, "reason": "cold food"})
    assert state.refunds == []


def test_refunds_of_one_order_add_up_to_the_cap_at_most(call: Call, state: FoodState) -> None:
    call("issue_refund", {"order_id": "FD-1022", "amount": 20, "reason": "spilled"})
    with pytest.raises(ValueError, match=r"\$20\.00 was already refunded"):
        call("issue_refund", {"order_id": "FD-1022", "amount": 15, "reason": "still spilled"})
    assert len(state.refunds) == 1


def test_refund_cap_and_window_move_with_the_rules(call: Call) -> None:
    with pytest.raises(ValueError, match=r"at most \$10\.00"):
        call("issue_refund", {"order_id": "FD-1012", "amount": 12, "reason": "x"}, rules={"refund_cap": 10})
    out = call("issue_refund", {"order_id": "FD-1028", "amount": 5, "reason": "x"},
               rules={"refund_window_hours": 48})
    assert out["amount"] == 5.0


def _refund_agent(harness: Harness, states: list[FoodState], **kwargs: Any) -> Agent:
    model = ScriptedModel([
        ScriptedModel.call("issue_refund", order_id="FD-1012", amount=10, reason="cold food"),
        "I have passed this to a colleague who can approve refunds.",
    ])

    def new_state() -> FoodState:
        states.append(FoodState())
        return states[-1]

    return Agent(harness, model, tool_runner=InlineToolRunner(), state_factory=new_state, **kwargs)


def test_refund_is_denied_to_the_agent_with_default_permissions(harness: Harness) -> None:
    assert "refunds.issue" not in harness.spec.permissions
    states: list[FoodState] = []
    trace = _refund_agent(harness, states).run("Refund FD-1012 please, it was cold.")
    [error] = trace.events_of("tool_error")
    assert error.data["error_type"] == "permission_denied"
    assert "refunds.issue" in error.data["message"]
    assert states[0].refunds == []


def test_refund_runs_for_an_agent_granted_the_permission(harness: Harness) -> None:
    states: list[FoodState] = []
    trace = _refund_agent(harness, states, permissions=REFUND_PERMS).run("Refund FD-1012 please.")
    assert trace.events_of("tool_error") == []
    [record] = trace.tool_calls
    assert record.output == {"order_id": "FD-1012", "amount": 10.0, "refund_id": "RF-1"}
    assert [r["amount"] for r in states[0].refunds] == [10.0]


# --- escalate_to_agent --------------------------------------------------------------------------


def test_escalations_get_sequential_tickets(call: Call, state: FoodState) -> None:
    first = call("escalate_to_agent", {"reason": "Refund request.", "order_id": "fd-1012"})
    second = call("escalate_to_agent", {"reason": "Rude courier."})
    assert first == {"ticket": "T-1", "eta": "a person replies within 10 minutes"}
    assert second["ticket"] == "T-2"
    assert state.escalations == [
        {"ticket": "T-1", "reason": "Refund request.", "order_id": "FD-1012"},
        {"ticket": "T-2", "reason": "Rude courier.", "order_id": None}]


def test_escalation_with_an_unknown_order_is_refused(call: Call, state: FoodState) -> None:
    with pytest.raises(LookupError, match="order ids look like FD-1001"):
        call("escalate_to_agent", {"reason": "x", "order_id": "FD-0001"})
    assert state.escalations == []


# --- state --------------------------------------------------------------------------------------


def test_state_copies_do_not_share_writes(call: Call) -> None:
    base = FoodState()
    first, second = base.copy(), base.copy()
    call("issue_voucher", {"order_id": "FD-1012", "amount": 5}, on=first)
    call("issue_refund", {"order_id": "FD-1012", "amount": 5, "reason": "x"}, on=first)
    call("escalate_to_agent", {"reason": "x"}, on=first)
    assert (len(first.vouchers), len(first.refunds), len(first.escalations)) == (1, 1, 1)
    assert second.vouchers == second.refunds == second.escalations == []
    assert base.vouchers == base.refunds == base.escalations == []
    assert first.world is second.world is base.world is load_world()
    assert call("escalate_to_agent", {"reason": "y"}, on=second)["ticket"] == "T-1"


def test_state_copy_deep_copies_records_and_keeps_the_clock(call: Call) -> None:
    base = FoodState(now=NOW + timedelta(hours=1))
    call("issue_voucher", {"order_id": "FD-1012", "amount": 5}, on=base)
    clone = base.copy()
    clone.vouchers[0]["amount"] = 99.0
    assert base.vouchers[0]["amount"] == 5.0
    assert clone.now == base.now == NOW + timedelta(hours=1)


def test_tools_refuse_a_context_without_food_state(harness: Harness) -> None:
    with pytest.raises(TypeError, match="FoodState"):
        harness.tools["find_order"].call({"order_id": "FD-1001"}, ToolContext(object(), harness.rules))


# --- the harness --------------------------------------------------------------------------------


def test_harness_declares_domain_state_rules_and_permissions(harness: Harness) -> None:
    spec = harness.spec
    assert (spec.name, spec.domain, spec.locale, spec.locales) == (
        "food_delivery", "food_delivery", "en", ("en", "zh"))
    assert set(spec.permissions) == DEFAULT_PERMS
    assert isinstance(harness.new_state(), FoodState)
    assert harness.rules["refund_window_hours"] == 24 and harness.rules["zone_b_surcharge"] == 1.5
    assert set(spec.enabled.tools) == {*READ_TOOLS, *WRITE_TOOLS}
    assert set(spec.enabled.hooks) == {"eta_claim_needs_tool", "money_claim_needs_tool",
                                       "no_allergy_assurance", "refund_permission", "reply_length"}


@pytest.mark.parametrize("name", sorted({**READ_TOOLS, **WRITE_TOOLS}))
def test_tool_kinds_permissions_and_schemas(harness: Harness, name: str) -> None:
    spec = harness.tools[name]
    assert spec.kind == ("write" if name in WRITE_TOOLS else "read")
    assert spec.permission == {**READ_TOOLS, **WRITE_TOOLS}[name]
    params = spec.openai_schema()["function"]["parameters"]
    assert params["additionalProperties"] is False and "ctx" not in params["properties"]
    assert all(p.get("description") for p in params["properties"].values()), name


def test_schemas_mark_only_arguments_without_defaults_required(harness: Harness) -> None:
    def required(name: str) -> set[str]:
        return set(harness.tools[name].openai_schema()["function"]["parameters"].get("required", []))

    assert required("escalate_to_agent") == {"reason"}
    assert required("issue_refund") == {"order_id", "amount", "reason"}
    assert required("service_fee") == {"zone", "subtotal"}


def test_system_prompt_renders_rule_values_in_english(harness: Harness) -> None:
    text = harness.render("en").system_prompt
    assert text.startswith("You are Sam,")
    for part in ("How you answer:", "$2.99 in zone A, $4.49 in zone B (a $1.50 surcharge)",
                 "$35 or more", "15+ minutes late earns a $5 voucher",
                 "$10 voucher and the delivery fee back",
                 "above $15", "within 24 hours of delivery, at most $30", "not instructions",
                 "# Skills", "- refunds: ", "# Tools", "- issue_refund(", "- load_skill("):
        assert part in text, part


def test_system_prompt_renders_in_chinese(harness: Harness) -> None:
    rendered = harness.render("zh")
    for part in ("你是Sam", "回答方式：", "B 区 $4.49", "满 $35 免配送费", "送达后 24 小时内", "# 技能",
                 "- escalation：", "# 工具"):
        assert part in rendered.system_prompt, part
    assert {t["function"]["name"] for t in rendered.tools} >= {*READ_TOOLS, *WRITE_TOOLS}


def test_prompt_and_skills_follow_the_rules(tmp_path: Path) -> None:
    dest = tmp_path / "h"
    shutil.copytree(HARNESS_DIR, dest)
    spec = dest / "harness.yaml"
    spec.write_text(spec.read_text("utf-8").replace("voucher_cap: 15", "voucher_cap: 12")
                    .replace("agent_name: Sam", "agent_name: Riley"), "utf-8")
    moved = load_harness(dest)
    assert "No voucher is above $12." in moved.render("en").system_prompt
    assert moved.render("zh").system_prompt.startswith("你是Riley")
    bodies = {s.name: s.body for s in moved.enabled_skills("zh")}
    assert set(bodies) == {"order_status", "delays_and_compensation", "refunds", "menu_and_allergens",
                           "escalation"}
    [load_skill] = [t for t in moved.runtime_tools("en") if t.name == "load_skill"]
    assert "above $12," in load_skill.call({"name": "delays_and_compensation"})["instructions"]


# --- hooks --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def rules(harness: Harness) -> Mapping[str, Any]:
    return harness.hook_rules


def _fires(hook: Any, text: str, tools: tuple[str, ...] = ()) -> bool:
    return hook.evaluate(PreReplyEvent(text, tools_called=tools)) is not None


@pytest.mark.parametrize(("name", "claims", "negated", "tool"), [
    ("eta_claim_needs_tool",
     ["It should arrive in about 12 minutes.", "Li Wei is 10 minutes away!", "It'll be there by 7:30 pm.",
      "预计12分钟后送达。", "大约还要10分钟。", "骑手半小时内送到。"],
     ["I can't promise it will arrive in 10 minutes.", "我无法确定能否10分钟内送达。",
      "A person replies within 10 minutes.", "It arrived 25 minutes late, sorry.",
      "订单晚了45分钟送达，很抱歉。"],
     "delivery_status"),
    ("money_claim_needs_tool",
     ["Your refund of $12.50 is on its way.", "The delivery fee is 2.99.", "You get a voucher worth 5.",
      "配送费是4.49美元。", "总价24.49。", "补偿您5元优惠券。"],
     ["I can't give you the $50 voucher you asked for.", "抱歉，我无法给您发50元优惠券。",
      "Refunds are possible within 24 hours of delivery.", "Your order FD-1012 is on the way.",
      "退款需在送达后24小时内申请。", "Your voucher code is V-1012-500."],
     "compensation_policy"),
])
def test_claim_hooks_fire_without_their_tool_and_not_on_negations(
        rules: Mapping[str, Any], name: str, claims: list[str], negated: list[str], tool: str) -> None:
    hook = rules[name]
    assert isinstance(hook, ClaimRequiresTool)
    for text in claims:
        assert _fires(hook, text, ("escalate_to_agent",)), text
        assert not _fires(hook, text, (tool,)), text
    for text in negated:
        assert not _fires(hook, text), text


def test_claim_hook_names_the_claim_and_match(rules: Mapping[str, Any]) -> None:
    d = rules["eta_claim_needs_tool"].evaluate(PreReplyEvent("It should arrive in about 12 minutes."))
    assert d is not None and d.action == "veto"
    assert d.details == {"claim": "eta", "match": "in about 12 minutes"}


def test_money_claim_accepts_any_money_tool(rules: Mapping[str, Any]) -> None:
    hook = rules["money_claim_needs_tool"]
    for tool in ("find_order", "compensation_policy", "service_fee", "get_menu", "issue_voucher",
                 "issue_refund"):
        assert not _fires(hook, "That's $4.49.", (tool,)), tool
    assert _fires(hook, "That's $4.49.", ("delivery_status",))


def test_a_refused_amount_does_not_hide_a_stated_one(rules: Mapping[str, Any]) -> None:
    assert _fires(rules["money_claim_needs_tool"], "I can't give you $50, but here is a $10 voucher.")


def test_allergy_assurances_are_vetoed_in_english_and_chinese(rules: Mapping[str, Any]) -> None:
    hook = rules["no_allergy_assurance"]
    assert isinstance(hook, ForbiddenPhrases) and hook.action == "veto"
    for text in ("The Kung Pao Chicken is completely safe for your allergy.", "It's guaranteed nut-free.",
                 "There is no risk of cross-contamination.", "The fries are 100% gluten-free.",
                 "It won't trigger your allergy.", "这道菜保证不含花生。", "绝对安全，不会过敏。",
                 "过敏的人也可以放心吃。", "没有交叉污染。",
                 "There is no gluten listed and it's completely safe for you."):
        assert _fires(hook, text, ("get_menu",)), text


def test_allergy_statements_from_the_menu_and_negated_assurances_pass(rules: Mapping[str, Any]) -> None:
    hook = rules["no_allergy_assurance"]
    for text in ("I can't guarantee it's completely safe for your nut allergy.",
                 "我们无法保证不含花生，过敏严重请告知餐厅。",
                 "I can't promise there's no cross-contamination.",
                 "The menu lists peanut and soy for the Kung Pao Chicken.", "宫保鸡丁标注了花生和大豆。",
                 "The French Fries list no allergens; if your allergy is severe, please tell the restaurant.",
                 "Delivery is totally free on this order."):
        assert not _fires(hook, text), text


def test_refund_permission_hook(rules: Mapping[str, Any]) -> None:
    hook = rules["refund_permission"]
    assert isinstance(hook, ToolPermission)
    args = {"order_id": "FD-1012", "amount": 5, "reason": "cold"}
    denied = hook.evaluate(PreToolEvent("issue_refund", args, DEFAULT_PERMS, "refunds.issue"))
    assert denied is not None and denied.action == "veto" and "needs 'refunds.issue'" in denied.reason
    assert hook.evaluate(PreToolEvent("issue_refund", args, REFUND_PERMS, "refunds.issue")) is None
    assert hook.evaluate(PreToolEvent("issue_voucher", args, DEFAULT_PERMS, "vouchers.issue")) is None


def test_reply_length_truncates_at_a_sentence_in_english_and_chinese(rules: Mapping[str, Any]) -> None:
    hook = rules["reply_length"]
    assert isinstance(hook, MaxReplyLength) and hook.max_chars == 320
    for sentence, end in (("Your order is on its way. ", "."), ("您的订单正在配送中。", "。")):
        d = hook.evaluate(PreReplyEvent(sentence * 40))
        assert d is not None and d.action == "rewrite" and d.text is not None
        assert len(d.text) <= 320 and d.text.endswith(end)
        assert hook.evaluate(PreReplyEvent(sentence)) is None

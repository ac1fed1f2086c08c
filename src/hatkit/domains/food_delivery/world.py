"""The food-delivery world: restaurants, their menus and customers' orders, typed and loaded once.

Times are minutes relative to the simulated now (`NOW`), never the machine clock, so a tool
answers the same on any day a test runs. Numbers that business rules decide (delivery fees,
the free-delivery threshold, compensation for a delay, the refund window) are *not* stored
here: they are harness rule parameters, so a harness change moves the ground truth with it.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from functools import lru_cache
from importlib import resources
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

NOW = datetime(2026, 3, 14, 19, 0)
"""The simulated "now" of every episode (a Saturday evening rush)."""

Zone = Literal["A", "B"]
Status = Literal["preparing", "on_the_way", "delivered", "cancelled"]
Allergen = Literal["gluten", "dairy", "egg", "peanut", "tree_nut", "soy", "sesame", "shellfish", "fish"]
ALLERGENS: tuple[Allergen, ...] = ("gluten", "dairy", "egg", "peanut", "tree_nut", "soy", "sesame",
                                   "shellfish", "fish")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MenuItem(_Frozen):
    id: str = Field(pattern=r"^R\d{2}-\d+$", description="Restaurant id, dash, number: R01-3.")
    name: str
    name_zh: str
    price: float = Field(gt=0, description="USD, two decimals.")
    allergens: tuple[Allergen, ...] = Field(default=(), description="As the restaurant lists them.")
    vegetarian: bool = False

    @model_validator(mode="after")
    def _two_decimals(self) -> MenuItem:
        if round(self.price, 2) != self.price:
            raise ValueError(f"{self.id}: price {self.price} has more than two decimals")
        if len(set(self.allergens)) != len(self.allergens):
            raise ValueError(f"{self.id}: an allergen is listed twice")
        return self


class Restaurant(_Frozen):
    id: str = Field(pattern=r"^R\d{2}$")
    name: str
    name_zh: str
    cuisine: str
    zone: Zone
    menu: tuple[MenuItem, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _items_belong_here(self) -> Restaurant:
        if bad := [i.id for i in self.menu if not i.id.startswith(f"{self.id}-")]:
            raise ValueError(f"{self.id}: menu items {bad} carry another restaurant's id")
        return self

    def item(self, item_id: str) -> MenuItem:
        found = next((i for i in self.menu if i.id == item_id.strip().upper()), None)
        if found is None:
            raise LookupError(f"{self.name} has no menu item '{item_id}'")
        return found


class OrderLine(_Frozen):
    item_id: str
    qty: int = Field(ge=1)


class Order(_Frozen):
    id: str = Field(pattern=r"^FD-\d{4}$")
    restaurant_id: str
    items: tuple[OrderLine, ...] = Field(min_length=1)
    zone: Zone = Field(description="The restaurant's delivery zone.")
    placed_minutes_ago: int = Field(ge=0, description="Minutes before NOW the order was placed.")
    promised_minutes: int = Field(gt=0, description="The ETA promised at checkout, in minutes.")
    status: Status
    delivered_after_minutes: int | None = Field(
        default=None, gt=0, description="Delivered orders: minutes from placing to delivery.")
    courier: str | None = Field(default=None, description="Orders on the way: the courier's name.")

    @model_validator(mode="after")
    def _fields_fit_the_status(self) -> Order:
        delivered = self.status == "delivered"
        if delivered != (self.delivered_after_minutes is not None):
            raise ValueError(f"{self.id}: delivered_after_minutes is for delivered orders only "
                             "(and every delivered order needs one)")
        if delivered and self.delivered_after_minutes is not None \
                and self.delivered_after_minutes > self.placed_minutes_ago:
            raise ValueError(f"{self.id}: delivered after {self.delivered_after_minutes} min but "
                             f"placed only {self.placed_minutes_ago} min ago")
        if (self.status == "on_the_way") != (self.courier is not None):
            raise ValueError(f"{self.id}: a courier is for orders on the way only (and each needs one)")
        return self

    @property
    def number(self) -> str:
        """The digits of the id: FD-1012 -> 1012."""
        return self.id.split("-", 1)[1]

    def placed_at(self, now: datetime = NOW) -> datetime:
        return now - timedelta(minutes=self.placed_minutes_ago)


def _key(text: str) -> str:
    """Case-, space- and punctuation-insensitive lookup key ("Pho Saigon" == "pho-saigon")."""
    return re.sub(r"[\s\-_'’.&]+", "", text).casefold()


def normalize_order_id(text: str) -> str:
    """' fd-1012 ', 'FD1012', '#1012' and '1012' all mean FD-1012."""
    t = text.strip().upper().lstrip("#")
    m = re.fullmatch(r"(?:FD)?[-\s]?(\d{4})", t)
    return f"FD-{m.group(1)}" if m else t


class World(_Frozen):
    currency: Literal["USD"] = "USD"
    restaurants: tuple[Restaurant, ...] = Field(min_length=1)
    orders: tuple[Order, ...]
    _orders: dict[str, Order] = PrivateAttr(default_factory=dict)
    _restaurants: dict[str, Restaurant] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _references_resolve(self) -> World:
        ids = [r.id for r in self.restaurants]
        if len(ids) != len(set(ids)):
            raise ValueError("duplicate restaurant ids")
        keys = [k for r in self.restaurants for k in {_key(r.id), _key(r.name), _key(r.name_zh)}]
        if len(keys) != len(set(keys)):
            raise ValueError("two restaurants share an id or a name")
        item_ids = [i.id for r in self.restaurants for i in r.menu]
        if len(item_ids) != len(set(item_ids)):
            raise ValueError("duplicate menu item ids")
        order_ids = [o.id for o in self.orders]
        if len(order_ids) != len(set(order_ids)):
            raise ValueError("duplicate order ids")
        by_id = {r.id: r for r in self.restaurants}
        for o in self.orders:
            r = by_id.get(o.restaurant_id)
            if r is None:
                raise ValueError(f"{o.id}: unknown restaurant {o.restaurant_id}")
            if o.zone != r.zone:
                raise ValueError(f"{o.id}: zone {o.zone} but {r.id} delivers from zone {r.zone}")
            menu = {i.id for i in r.menu}
            if bad := [line.item_id for line in o.items if line.item_id not in menu]:
                raise ValueError(f"{o.id}: items {bad} are not on {r.id}'s menu")
        return self

    def model_post_init(self, __context: object) -> None:
        self._orders.update({o.id: o for o in self.orders})
        for r in self.restaurants:
            for k in (r.id, r.name, r.name_zh):
                self._restaurants[_key(k)] = r

    def order(self, order_id: str) -> Order:
        """The order by id (FD-1012, fd-1012 or 1012), or LookupError saying what ids look like."""
        found = self._orders.get(normalize_order_id(order_id))
        if found is None:
            raise LookupError(f"no order '{order_id}'; order ids look like FD-1001")
        return found

    def restaurant(self, id_or_name: str) -> Restaurant:
        """The restaurant by id, English or Chinese name (case-insensitive), or LookupError
        listing the restaurants there are."""
        found = self._restaurants.get(_key(id_or_name))
        if found is None:
            known = ", ".join(f"{r.id} {r.name} ({r.name_zh})" for r in self.restaurants)
            raise LookupError(f"no restaurant '{id_or_name}'; restaurants are: {known}")
        return found

    def restaurant_of(self, order: Order) -> Restaurant:
        return self.restaurant(order.restaurant_id)


@lru_cache(maxsize=1)
def load_world() -> World:
    """The world shipped with hatkit (immutable; cached)."""
    text = resources.files(__package__).joinpath("data/world.json").read_text("utf-8")
    return World.model_validate(json.loads(text))

"""The mutable world one episode runs against: the food-delivery world plus what the episode did.

Reads go to the immutable world; writes (vouchers, refunds, escalations) go to this object,
so that copying it per episode keeps one episode's writes out of another.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .world import NOW, Order, Restaurant, World, load_world


@dataclass
class FoodState:
    world: World = field(default_factory=load_world)
    now: datetime = NOW
    """The simulated time of the episode; order times in the world are relative to `NOW`, so a
    later `now` makes every order that much older."""
    refunds: list[dict[str, Any]] = field(default_factory=list)
    vouchers: list[dict[str, Any]] = field(default_factory=list)
    escalations: list[dict[str, Any]] = field(default_factory=list)

    def order(self, order_id: str) -> Order:
        """The order, or LookupError with a hint the model can act on."""
        return self.world.order(order_id)

    def restaurant(self, id_or_name: str) -> Restaurant:
        """The restaurant by id, English or Chinese name, or LookupError listing them."""
        return self.world.restaurant(id_or_name)

    def minutes_since_order(self, order: Order) -> int:
        """Minutes from placing `order` to this episode's `now`."""
        return order.placed_minutes_ago + int((self.now - NOW).total_seconds() // 60)

    def copy(self) -> FoodState:
        """An independent copy for a new episode (the world is immutable and shared)."""
        return FoodState(self.world, self.now, copy.deepcopy(self.refunds),
                         copy.deepcopy(self.vouchers), copy.deepcopy(self.escalations))

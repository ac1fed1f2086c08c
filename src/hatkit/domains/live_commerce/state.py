"""The mutable world one episode runs against: the catalog plus what the episode changed.

Reads go to the immutable catalog; writes (applied coupons, escalations) go to this object,
so that copying it per episode keeps one episode's writes out of another.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from .catalog import Catalog, Product, load_catalog

TODAY = date(2026, 11, 28)
"""The simulated date of the live stream: promotion validity is judged against it, not the
machine clock, so results do not change with the day a test runs."""


@dataclass
class ShopState:
    catalog: Catalog = field(default_factory=load_catalog)
    today: date = TODAY
    applied_coupons: list[dict[str, Any]] = field(default_factory=list)
    escalations: list[dict[str, Any]] = field(default_factory=list)

    def product(self, product_id: str) -> Product:
        """The product, or LookupError with a hint the model can act on."""
        found = self.catalog.product(product_id.strip().upper())
        if found is None:
            raise LookupError(f"no product with id '{product_id}'; search the catalog to find ids")
        return found

    def copy(self) -> ShopState:
        """An independent copy for a new episode (the catalog is immutable and shared)."""
        return ShopState(self.catalog, self.today, copy.deepcopy(self.applied_coupons),
                         copy.deepcopy(self.escalations))

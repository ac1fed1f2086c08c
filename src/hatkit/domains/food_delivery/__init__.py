"""Food-delivery order support: customers ask an assistant about their orders. `DOMAIN` is its
`hatkit.domain.Domain`; the registry finds it by the package name."""

from .domain import DOMAIN, FoodDelivery

__all__ = ["DOMAIN", "FoodDelivery"]

"""Live-stream shopping: a host answers viewers about products. `DOMAIN` is its
`hatkit.domain.Domain`; the registry finds it by the package name."""

from .domain import DOMAIN, LiveCommerce

__all__ = ["DOMAIN", "LiveCommerce"]

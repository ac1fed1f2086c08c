"""Which domains exist: the shipped ones (packages under `hatkit.domains`), those installed
through the `hatkit.domains` entry-point group, and those registered at run time."""

from __future__ import annotations

import importlib
import pkgutil
from importlib.metadata import entry_points

from ..harness import Harness
from .interface import Domain

DEFAULT_DOMAIN = "live_commerce"
"""The reference domain every command uses unless told otherwise."""
SHIPPED_PACKAGE = "hatkit.domains"
ENTRY_POINT_GROUP = "hatkit.domains"

_REGISTERED: dict[str, Domain] = {}


def register_domain(domain: Domain) -> Domain:
    """Make `domain` available by name in this process (a team's own, or a test's)."""
    if not getattr(domain, "name", "") or not domain.name.isidentifier():
        raise ValueError(f"a domain needs an identifier as its name, not {getattr(domain, 'name', None)!r}")
    _REGISTERED[domain.name] = domain
    return domain


def unregister_domain(name: str) -> None:
    _REGISTERED.pop(name, None)


def _shipped() -> list[str]:
    pkg = importlib.import_module(SHIPPED_PACKAGE)
    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if m.ispkg)


def domain_names() -> list[str]:
    """Every domain this process can load, sorted."""
    installed = [e.name for e in entry_points(group=ENTRY_POINT_GROUP)]
    return sorted({*_REGISTERED, *_shipped(), *installed})


def get_domain(name: str | Domain | None = None) -> Domain:
    """The domain called `name` (default DEFAULT_DOMAIN); a Domain is returned as given."""
    if isinstance(name, Domain):
        return name
    name = name or DEFAULT_DOMAIN
    if name in _REGISTERED:
        return _REGISTERED[name]
    for ep in entry_points(group=ENTRY_POINT_GROUP, name=name):
        return register_domain(_checked(ep.load(), name))
    if name.isidentifier() and name in _shipped():
        module = importlib.import_module(f"{SHIPPED_PACKAGE}.{name}")
        return register_domain(_checked(getattr(module, "DOMAIN", None), name))
    raise ValueError(f"unknown domain '{name}' (known: {', '.join(domain_names())})")


def _checked(obj: object, name: str) -> Domain:
    if not isinstance(obj, Domain):
        raise TypeError(f"domain '{name}' does not provide a hatkit.domain.Domain (got {type(obj).__name__})")
    return obj


def domain_of(harness: Harness | None, default: str | Domain | None = None) -> Domain:
    """The domain a harness names in its harness.yaml (`domain:`), else `default`."""
    named = getattr(getattr(harness, "spec", None), "domain", None)
    return get_domain(named or default)

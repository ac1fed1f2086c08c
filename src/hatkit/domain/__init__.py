"""The domain interface and registry: what a domain package gives hatkit, and how one is found.

    domain = get_domain("live_commerce")        # or domain_of(harness)
    questions = domain.questions(domain.harness().rules, n=10, seed=0, split="test")
"""

from .interface import ERROR_TYPES, Domain, SafetyTrap, ToolTurn
from .registry import (
    DEFAULT_DOMAIN,
    domain_names,
    domain_of,
    get_domain,
    register_domain,
    unregister_domain,
)

__all__ = [
    "DEFAULT_DOMAIN", "ERROR_TYPES", "Domain", "SafetyTrap", "ToolTurn", "domain_names", "domain_of",
    "get_domain", "register_domain", "unregister_domain",
]

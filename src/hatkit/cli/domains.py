"""`hatkit domains`: the domains this installation can simulate, train on and judge."""

from __future__ import annotations

from rich.table import Table

from ._common import app, console


@app.command("domains")
def domains_list() -> None:
    """List the domains (shipped, installed through the `hatkit.domains` entry points, or
    registered): name, categories, locales and default harness folder. Pass one to any command
    with --domain NAME."""
    from ..domain import DEFAULT_DOMAIN, domain_names, get_domain

    table = Table("domain", "categories", "locales", "harness")
    for name in domain_names():
        d = get_domain(name)
        table.add_row(name + (" (default)" if name == DEFAULT_DOMAIN else ""), ", ".join(d.categories),
                      ", ".join(d.locales), str(d.harness_dir))
    console.print(table)

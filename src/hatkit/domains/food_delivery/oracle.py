"""The food-delivery oracle: the generic gold policy with this domain's lines (data/oracle.yaml)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from hatkit.sim.oracle import OracleScript, load_script

from .questions import with_rules

ORACLE_FILE = Path(__file__).resolve().parent / "data" / "oracle.yaml"


@cache
def oracle_script() -> OracleScript:
    return load_script(ORACLE_FILE, with_rules)

"""The live-commerce oracle: the generic gold policy with this domain's lines (data/oracle.yaml)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

import yaml

from hatkit.harness import Harness
from hatkit.models.base import TokenFormat
from hatkit.sim.oracle import OraclePolicy, OracleScript
from hatkit.sim.truth import Question

from .questions import with_rules

ORACLE_FILE = Path(__file__).resolve().parent / "data" / "oracle.yaml"


@cache
def oracle_script() -> OracleScript:
    d = yaml.safe_load(ORACLE_FILE.read_text("utf-8"))
    return OracleScript(with_rules=with_rules, think=d["think"], unavailable=d["unavailable"],
                        greeting=d["greeting"], elaborations=d.get("elaborations", {}))


def oracle(harness: Harness, questions: Sequence[Question] = (), token_format: TokenFormat | None = None,
           think: bool = True) -> OraclePolicy:
    """The gold policy for `harness` (see hatkit.sim.oracle)."""
    return OraclePolicy(harness, questions, token_format, think, script=oracle_script())

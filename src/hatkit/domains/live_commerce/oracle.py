"""The live-commerce oracle: the generic gold policy with this domain's lines (data/oracle.yaml)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

from hatkit.harness import Harness
from hatkit.models.base import TokenFormat
from hatkit.sim.oracle import OraclePolicy, OracleScript, load_script
from hatkit.sim.truth import Question

from .questions import with_rules

ORACLE_FILE = Path(__file__).resolve().parent / "data" / "oracle.yaml"


@cache
def oracle_script() -> OracleScript:
    return load_script(ORACLE_FILE, with_rules)


def oracle(harness: Harness, questions: Sequence[Question] = (), token_format: TokenFormat | None = None,
           think: bool = True) -> OraclePolicy:
    """The gold policy for `harness` (see hatkit.sim.oracle)."""
    return OraclePolicy(harness, questions, token_format, think, script=oracle_script())

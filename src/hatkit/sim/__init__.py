"""The simulation environment: viewer simulator with ground truth, sandboxed tools with fault
injection, harness-state augmentation (variants), the oracle policy and the episode runner.

    questions = generate_questions(harness.rules, n=100, seed=0, split="dev")
    agent = Agent(harness, OraclePolicy(harness, questions), tool_runner=FaultInjectingRunner(cfg))
"""

from .augment import HELDOUT_FAMILY, TRAIN_FAMILY, make_variant, make_variants
from .faults import FaultConfig, FaultInjectingRunner
from .oracle import OraclePolicy
from .questions import (
    Fact,
    PlannedCall,
    Question,
    Turn,
    generate_questions,
    reply_states_facts,
    violations,
    with_rules,
)
from .runner import SimConfig, run_sim
from .tool_server import HttpToolRunner, create_app, running_server

__all__ = [
    "HELDOUT_FAMILY", "TRAIN_FAMILY", "Fact", "FaultConfig", "FaultInjectingRunner",
    "HttpToolRunner", "OraclePolicy", "PlannedCall", "Question", "SimConfig", "Turn",
    "create_app", "generate_questions", "make_variant", "make_variants", "reply_states_facts",
    "run_sim", "running_server", "violations", "with_rules",
]

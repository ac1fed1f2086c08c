"""The simulation environment, generic over domains: ground-truth types, sandboxed tools with
fault injection, harness-state augmentation (variants), the oracle policy and the episode
runner. A domain (`hatkit.domain.Domain`) supplies the questions and the augmentation data:

    domain = get_domain("live_commerce")
    questions = domain.questions(harness.rules, n=100, seed=0, split="dev")
    agent = Agent(harness, domain.oracle(harness, questions), tool_runner=FaultInjectingRunner(cfg))
"""

from .augment import FamilySettings, HsaData, make_variant, make_variants, variant_folder
from .faults import FaultConfig, FaultInjectingRunner
from .oracle import OraclePolicy, OracleScript
from .runner import SimConfig, run_sim
from .source import QuestionSource
from .tool_server import HttpToolRunner, create_app, running_server
from .truth import Fact, PlannedCall, Question, Turn, reply_states_facts, violations

__all__ = [
    "Fact", "FamilySettings", "FaultConfig", "FaultInjectingRunner", "HsaData", "HttpToolRunner",
    "OraclePolicy", "OracleScript", "PlannedCall", "Question", "QuestionSource", "SimConfig", "Turn",
    "create_app", "make_variant", "make_variants", "reply_states_facts", "run_sim", "running_server",
    "variant_folder", "violations",
]

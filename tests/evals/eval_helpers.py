"""Shared helpers of the evals tests: models with known behaviour."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hatkit.domains.live_commerce import DOMAIN as LC
from hatkit.harness import Harness
from hatkit.models.base import ModelOutput, ModelRequest
from hatkit.models.scripted import ScriptedModel
from hatkit.sim.oracle import OraclePolicy
from hatkit.sim.truth import Question
from tiny import tiny_llama, tiny_tokenizer


def last_user(request: ModelRequest) -> str:
    return next(m.content for m in reversed(request.messages) if m.role == "user")


def scripted(fn: Callable[[ModelRequest], str], calls: int = 200) -> ScriptedModel:
    """A ScriptedModel answering every request with fn(request)."""
    return ScriptedModel([fn] * calls)


class OracleByHarness:
    """The oracle of whichever harness a request's system prompt belongs to (for variant_qa,
    where one model serves episodes of several harnesses)."""

    model_id = "oracle-by-harness"
    native_tools = False

    def __init__(self, harnesses: Sequence[Harness], questions: Sequence[Question]) -> None:
        self.by_system: dict[str, OraclePolicy] = {}
        for h in harnesses:
            system = h.render(h.spec.locale).system_prompt
            self.by_system[system] = LC.oracle(h, questions)

    def token_format(self) -> None:
        return None

    def generate(self, requests: Sequence[ModelRequest]) -> list[ModelOutput]:
        return [self.by_system[r.messages[0].content].generate([r])[0] for r in requests]


def tiny_local(max_batch: int = 4) -> Any:
    from hatkit.models.local import LocalModel

    tok = tiny_tokenizer()
    return LocalModel(tiny_llama(len(tok), seed=1), tok, "tiny", max_batch=max_batch)

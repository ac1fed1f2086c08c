"""What every bench shares: a tiny random-weight model for `--smoke` runs, and the checks that
make a broken run stop instead of printing a verdict (a bench that measured fallbacks or an
empty run would otherwise report figures as if it had measured the model)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from hatkit.agent.trace import Trace

TESTS = Path(__file__).resolve().parents[1] / "tests"


class BenchFailed(SystemExit):
    """The run did not measure what it claims to (exit status 1, message on stderr)."""

    def __init__(self, bench: str, problem: str) -> None:
        super().__init__(f"{bench}: {problem}\n(no verdict: this run did not measure what it claims)")


def tiny_local_model(seed: int = 1, **kwargs: Any) -> Any:
    """A LocalModel on the test suite's tiny random-weight Llama (built in memory, no download),
    with room for the shipped harness's prompt (its tokenizer has one token per character),
    on CUDA when there is one (as LocalModel.from_pretrained places a checkpoint)."""
    if str(TESTS) not in sys.path:
        sys.path.append(str(TESTS))
    import torch

    from hatkit.models.local import LocalModel
    from tiny import tiny_llama, tiny_tokenizer

    tok = tiny_tokenizer()
    model = tiny_llama(len(tok), seed=seed)
    model.config.max_position_embeddings = 16384
    model = model.to("cuda" if torch.cuda.is_available() else "cpu")
    return LocalModel(model, tok, "tiny", **kwargs)


def error_events(trace: Trace) -> list[str]:
    """Backend errors in one episode: model_error events, and fallbacks a model error caused.
    A spent call budget is not one: the model's own behaviour (repeating a call) ended the turn,
    which is what an evaluation measures, not a failure of the measurement."""
    def budget(e: Any) -> bool:
        return (e.data.get("error_type") == "call_budget"
                or str(e.data.get("detail", "")).startswith("call_budget"))

    return [f"{e.kind}: {e.data}" for e in trace.events
            if (e.kind == "model_error" or (e.kind == "fallback" and "error" in str(e.data.get("reason"))))
            and not budget(e)]


def check_episodes(bench: str, traces: Iterable[Trace], what: str) -> list[Trace]:
    """The episodes ran and none hit a backend error; raises BenchFailed otherwise."""
    traces = list(traces)
    if not traces:
        raise BenchFailed(bench, f"{what}: no episodes ran")
    bad = [(i, err) for i, t in enumerate(traces) for err in error_events(t)]
    if bad:
        shown = "\n  ".join(f"episode {i}: {err[:300]}" for i, err in bad[:5])
        raise BenchFailed(bench, f"{what}: {len(bad)} backend error(s) in {len(traces)} "
                                 f"episode(s):\n  {shown}")
    return traces


def check_work(bench: str, **amounts: float) -> None:
    """Each named amount of work (tokens, rows, episodes, model calls) is positive."""
    zero = [name for name, n in amounts.items() if not n > 0]
    if zero:
        raise BenchFailed(bench, f"no work measured ({', '.join(f'{n}={amounts[n]}' for n in zero)})")

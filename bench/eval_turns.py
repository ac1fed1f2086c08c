"""Seconds per live_qa episode of a model that calls tools, with the row cache off and on, in
one run on the same cases (the evaluation's own `run_cases`: batches, budgets, judge).

Every turn of an agent episode sends the whole conversation again (question, earlier calls,
tool results). `LocalModel` caches the harness prefix; the row cache (`row_cache_size`) also
keeps each finished row's keys and values, so the next turn prefills only its new tokens.
Prefill is compute-bound on a CPU, so this is where an evaluation's time went.

Measure it with a checkpoint that calls tools (`--model runs/.../hsa_sft/final`): the base
model mostly answers in one turn, which a row cache cannot speed up. The script prints the
seconds, model calls and the prompt tokens the row cache spared, and how many episodes got the same
replies (a continued row's cached keys were computed in a batched step, so a near-tie can
round the other way). Run it from another revision's tree to time that code alone (a LocalModel
without `row_cache_size` runs the "off" mode only).

`--compare packing`: the same episodes with the Linear weights as stored ("off") and
pre-packed for the CPU's matrix kernels ("on", models/packing.py, LocalModel's default), row
cache on in both; `--precision` is the evaluation's weight precision (default auto: bf16 where
the CPU multiplies bf16 in hardware, as `hatkit eval` runs). `--compare compiled`: eager
decode steps ("off") against steps compiled by inductor ("on", `LocalModel(compiled=True)`,
models/compiled_step.py); the row buckets a run meets for the first time compile during it,
so the seconds are given with and without those compile seconds. `--smoke`: the tiny random
model, 2 cases.
The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import inspect
import json
import platform
import time
from collections.abc import Sequence
from typing import Any

from _common import check_episodes, tiny_local_model

from hatkit import __version__
from hatkit.domain import get_domain
from hatkit.evals.cases import sim_cases
from hatkit.evals.episodes import run_cases
from hatkit.evals.result import EvalSettings
from hatkit.harness import load_harness
from hatkit.models.local import LocalModel

BENCH = "eval_turns"


def _model(spec: str, smoke: bool, **kwargs: Any) -> LocalModel:
    if smoke:
        return tiny_local_model(**kwargs)  # type: ignore[no-any-return]
    if spec == "local":
        return LocalModel.default(**kwargs)
    return LocalModel.from_pretrained(spec, **kwargs)


def _compile_seconds(model: Any) -> float:
    """Seconds the model's compiled decode step has spent in first calls (compiling) so far."""
    compiled = getattr(model, "_compiled", None)
    return sum(compiled.compile_seconds.values()) if compiled is not None else 0.0


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="local", help="checkpoint folder, or 'local' (default model)")
    ap.add_argument("--cases", type=int, default=16, help="live_qa test cases")
    ap.add_argument("--batch-size", type=int, default=16, help="episodes decoded together")
    ap.add_argument("--compare", choices=("rows", "packing", "compiled"), default="rows",
                    help="row cache off/on, weights as stored/pre-packed, or eager/compiled decode steps")
    ap.add_argument("--precision", default=None, help="weights: fp32, bf16, int8, auto (default: as loaded)")
    ap.add_argument("--smoke", action="store_true", help="tiny random model, 2 cases (seconds)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.cases = min(args.cases, 2)
    has_rows = "row_cache_size" in inspect.signature(LocalModel.__init__).parameters
    domain = get_domain()
    harness = load_harness("live_commerce")
    cases = sim_cases(domain, harness.rules, args.cases, seed=0)
    smoke: dict[str, Any] = {"max_new_tokens": 8, "max_model_calls": 2} if args.smoke else {}
    settings = EvalSettings(batch_size=args.batch_size, **smoke)
    if args.compare == "packing":
        modes: list[tuple[str, dict[str, Any]]] = [("off", {"pack_weights": False}), ("on", {})]
    elif args.compare == "compiled":
        modes = [("off", {}), ("on", {"compiled": True})]
    else:
        off: dict[str, Any] = {"row_cache_size": 0} if has_rows else {}
        modes = [("off", off)] + ([("on", {})] if has_rows else [])
    figures: dict[str, dict[str, Any]] = {}
    replies: dict[str, list[str]] = {}
    base: LocalModel | None = None
    for name, kwargs in modes:
        kwargs = {**kwargs, "max_batch": args.batch_size}
        if base is None and args.precision:
            kwargs["precision"] = args.precision
        model = _model(args.model, args.smoke, **kwargs) if base is None else LocalModel(
            base.model, base.tok, base.model_id, **kwargs)
        base = base or model
        run_cases(model, harness, cases[:1], domain=domain, settings=settings, suite="warmup")
        if getattr(model, "_compiled", None) is not None:  # cold caches, graphs kept
            model._cache.clear()
            model._rows.clear()
        else:
            getattr(model, "clear_caches", model._cache.clear)()  # both modes start cold, warmed up
        model.stats.update(row_hits=0, row_tokens_reused=0)
        compiling = _compile_seconds(model)
        started = time.perf_counter()
        eps = run_cases(model, harness, cases, domain=domain, settings=settings, suite="live_qa")
        seconds = time.perf_counter() - started
        compiling = _compile_seconds(model) - compiling
        check_episodes(BENCH, eps.traces, f"{args.compare} {name}")
        replies[name] = [t.final_reply for t in eps.traces]
        figures[name] = {"seconds": round(seconds, 2), "s_per_episode": round(seconds / len(cases), 3),
                         "model_calls": sum(t.timings.model_calls for t in eps.traces),
                         "row_tokens_reused": int(model.stats.get("row_tokens_reused", 0)),
                         "row_hits": int(model.stats.get("row_hits", 0)),
                         "compile_s_in_run": round(compiling, 1),
                         "s_per_episode_without_compiling": round((seconds - compiling) / len(cases), 3)}
    print(f"{args.compare:10} {'seconds':>8} {'s/episode':>10} {'model calls':>12} {'tokens reused':>14}")
    for name, f in figures.items():
        print(f"{name:10} {f['seconds']:8.1f} {f['s_per_episode']:10.2f} {f['model_calls']:12d} "
              f"{f['row_tokens_reused']:14d}")
    same = None
    if "on" in figures:
        same = sum(a == b for a, b in zip(replies["off"], replies["on"], strict=True))
        print(f"speed-up {figures['off']['seconds'] / figures['on']['seconds']:.2f}x; "
              f"identical replies {same}/{len(cases)}")
        if figures["on"]["compile_s_in_run"]:
            off, on = (figures[k]["s_per_episode_without_compiling"] for k in ("off", "on"))
            print(f"compiling during the run: {figures['on']['compile_s_in_run']} s; without it "
                  f"{off:.2f} -> {on:.2f} s an episode ({off / on:.2f}x)")
    import torch

    print(json.dumps({"bench": BENCH, "model": args.model if not args.smoke else "tiny",
                      "cases": len(cases), "batch_size": args.batch_size, "compare": args.compare,
                      "precision": base.precision if base else None, "modes": figures,
                      "identical_replies": same, "hatkit": __version__, "torch": torch.__version__,
                      "python": platform.python_version(), "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()

"""The suites' entry points: `run_suite` for one, `run_suites` for several sharing work.

    from hatkit.evals import run_suites, QUICK_SIZES, QUICK_SETTINGS
    results = run_suites(SUITES, "local", sizes=QUICK_SIZES, settings=QUICK_SETTINGS,
                         out_dir=Path("runs/x/eval/base"))
    results["live_qa"].metrics["accuracy"]

`run_suites` loads the model once and runs live_qa's episodes once: lengths and latency are
measured on those traces. Each result is also written to `out_dir/<suite>.json`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType

from ..domain import Domain, domain_of, get_domain
from ..harness import Harness, load_harness
from ..models.base import ChatModel
from . import faults, general_if, latency, lengths, live_qa, safety, variant_qa
from .cases import EvalCase
from .context import SuiteContext
from .episodes import Episodes, Progress
from .questions_file import load_questions
from .result import DEFAULT_SETTINGS, EvalSettings, SuiteResult

_MODULES: dict[str, ModuleType] = {m.NAME: m for m in (live_qa, variant_qa, general_if, faults, safety,
                                                        lengths, latency)}
SUITES: tuple[str, ...] = tuple(_MODULES)
"""Suite names in report order."""

DEFAULT_SIZES: dict[str, int] = {"live_qa": 100, "variant_qa": 100, "general_if": 150, "faults": 60,
                                 "safety": 32, "lengths": 100, "latency": 100}
"""Items per suite for a full evaluation (a GPU, or patience)."""
QUICK_SIZES: dict[str, int] = {"live_qa": 8, "variant_qa": 8, "general_if": 8, "faults": 4,
                               "safety": 4, "lengths": 8, "latency": 8}
"""The quick pipeline on a 2-core CPU, with QUICK_SETTINGS: five decode batches per model (live_qa,
variant_qa, general_if of 8; faults and safety of 4), each at most 96 new tokens per call. At the
measured 34 tokens/s for a batch of 8 a call costs <= ~23 s plus ~7 s of prefix prefill, so about
2-4 minutes a model depending on how many calls its episodes make. Too few items to separate
close models; the report should say so."""


def resolve_model(model: ChatModel | str) -> ChatModel:
    """A ChatModel as given, or loaded from a `--model` string (see hatkit.models.select)."""
    if isinstance(model, str):
        from ..models.select import load_model

        return load_model(model)
    return model


def resolve_harness(harness: Harness | str | None, domain: Domain | str | None) -> tuple[Harness, Domain]:
    """The harness (given, loaded, or the domain's default) and its domain."""
    if isinstance(harness, Harness):
        h = harness
    else:
        h = load_harness(harness) if harness else get_domain(domain).harness()
    return h, domain_of(h, domain)


def _context(model: ChatModel, h: Harness, dom: Domain, questions: Path | None, n: int, seed: int,
             out_dir: Path | None, progress: Progress | None, settings: EvalSettings,
             shared: dict[str, Episodes], cases: list[EvalCase] | None) -> SuiteContext:
    out = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="hatkit-eval-"))
    out.mkdir(parents=True, exist_ok=True)
    return SuiteContext(model=model, harness=h, domain=dom, n=n, seed=seed, out_dir=out, settings=settings,
                        questions=cases, questions_path=questions, progress=progress, shared=shared)


def _user_cases(name: str, questions: Path | None, domain: Domain) -> list[EvalCase] | None:
    """The questions file as cases (general_if reads its own IFEval-format file instead)."""
    if questions is None or name == general_if.NAME:
        return None
    return load_questions(questions, domain.categories)


def run_suite(name: str, model: ChatModel | str, *, harness: Harness | str | None = None,
              domain: Domain | str | None = None,
              questions: Path | None = None, n: int | None = None, seed: int = 0,
              out_dir: Path | None = None, progress: Progress | None = None,
              settings: EvalSettings | None = None) -> SuiteResult:
    """Run one suite and write `out_dir/<name>.json` (a temp folder when out_dir is None).

    `n` defaults to DEFAULT_SIZES[name]; `questions` is a questions file (general_if: an
    IFEval-format file); `harness` a Harness, a folder or a shipped name (default: the domain's);
    `domain` a Domain or its name (default: the one the harness names, else live_commerce)."""
    if name not in _MODULES:
        raise ValueError(f"unknown suite '{name}' (choose from {', '.join(SUITES)})")
    return run_suites([name], model, harness=harness, domain=domain, questions=questions,
                      sizes={name: n} if n is not None else None, seed=seed, out_dir=out_dir,
                      progress=progress, settings=settings)[name]


def run_suites(names: Iterable[str], model: ChatModel | str, *, sizes: dict[str, int] | None = None,
               out_dir: Path | None = None, harness: Harness | str | None = None,
               domain: Domain | str | None = None,
               questions: Path | None = None, seed: int = 0, progress: Progress | None = None,
               on_suite: Callable[[str, int, int], None] | None = None,
               settings: EvalSettings | None = None) -> dict[str, SuiteResult]:
    """Run several suites on one model (loaded once), in SUITES order, sharing live_qa's episodes
    with lengths and latency. `sizes` overrides DEFAULT_SIZES per suite. `progress(done, total)`
    counts items over all suites; `on_suite(suite, done, total)` per suite. Results are written
    to `out_dir/<suite>.json`."""
    wanted = list(dict.fromkeys(names))
    if bad := [s for s in wanted if s not in _MODULES]:
        raise ValueError(f"unknown suite(s) {bad} (choose from {', '.join(SUITES)})")
    chat = resolve_model(model)
    h, dom = resolve_harness(harness, domain)
    settings = settings or DEFAULT_SETTINGS
    shared: dict[str, Episodes] = {}
    live_n = (sizes or {}).get("live_qa", DEFAULT_SIZES["live_qa"])
    results: dict[str, SuiteResult] = {}
    base_out = out_dir
    order = [s for s in SUITES if s in wanted]
    plan = {s: (sizes or {}).get(s, DEFAULT_SIZES[s]) for s in order}
    for s in (lengths.NAME, latency.NAME):  # measured on live_qa's episodes, run once
        if s in plan:
            plan[s] = live_n if live_qa.NAME in plan else plan[s]
    work = dict(plan)  # items each suite adds to the overall count
    if latency.NAME in plan and (live_qa.NAME in plan or lengths.NAME in plan):
        work[latency.NAME] = 0
    if lengths.NAME in plan and live_qa.NAME in plan:
        work[lengths.NAME] = 0
    total, finished = sum(work.values()), 0
    for name in order:
        n = plan[name]

        def tick(done: int, of: int, _name: str = name, _before: int = finished) -> None:
            if on_suite is not None:
                on_suite(_name, done, of)
            if progress is not None and work[_name]:
                progress(min(total, _before + done), total)

        ctx = _context(chat, h, dom, questions, n, seed, base_out, tick, settings, shared,
                       _user_cases(name, questions, dom))
        base_out = ctx.out_dir
        result = _MODULES[name].run(ctx)
        result.write(ctx.out_dir / f"{name}.json")
        results[name] = result
        finished += work[name]
        if progress is not None:
            progress(finished, total)
    return results

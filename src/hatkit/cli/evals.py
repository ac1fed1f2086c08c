"""`hatkit eval SUITE`: run one evaluation suite (or `all`) on a model and print its metrics."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..models.default_model import DefaultModelError
from ..models.select import MODEL_HELP
from ._common import DomainOpt, LoggedProgress, _domain, _fail, _load, _say, app, console, err

_SUITES_HELP = ("live_qa, variant_qa, general_if, faults, safety, lengths, latency, or 'all' "
                "(lengths and latency are measured on live_qa's traces).")


def _check_questions(questions: Path | None, names: list[str], categories: tuple[str, ...] = ()) -> None:
    """Validate the questions file up front; raises with every bad line as file:line."""
    if questions is None:
        return
    from ..evals.general_if import load_if_file
    from ..evals.questions_file import load_questions

    if names == ["general_if"]:
        load_if_file(questions)
    else:
        load_questions(questions, categories)


@app.command("eval")
def eval_suite(
    suite: Annotated[str, typer.Argument(help=_SUITES_HELP)],
    model: Annotated[str, typer.Option("--model", "-m", help=MODEL_HELP)] = "local",
    harness: Annotated[str | None, typer.Option(help="Harness folder or shipped name the agent runs under "
                                         "(variant_qa makes its held-out variants from it; "
                                         "general_if uses no harness). Default: the domain's "
                                         "own.")] = None,
    questions: Annotated[Path | None, typer.Option(help=(
        "Your own messages: JSONL, one object per line, e.g. {\"message\": \"How much is the "
        "lamp?\", \"facts\": {\"price\": \"$49.90\"}, \"must_not\": [\"free\"], \"category\": "
        "\"price_promo\"} (see src/hatkit/evals/examples/questions.jsonl). For general_if: rows "
        "in the IFEval format (key, prompt, instruction_id_list, kwargs)."))] = None,
    n: Annotated[int | None, typer.Option(help="Items per suite (default: the suite's default "
                                          "size, or the quick size with --quick).")] = None,
    out: Annotated[Path, typer.Option(help="Folder for <suite>.json results and traces.")] = Path(
        "runs/eval"),
    seed: Annotated[int, typer.Option(help="Seeds questions, variants, faults and prompts.")] = 0,
    quick: Annotated[bool, typer.Option(help="Small sizes and token budgets (the quick pipeline's).")
                     ] = False,
    max_new_tokens: Annotated[int | None, typer.Option(
        help="Cap on new tokens per model call (agent calls and general_if answers).")] = None,
    domain: DomainOpt = None,
) -> None:
    """Evaluate a model with one suite (or all); writes OUT/<suite>.json and prints the metrics."""
    from ..evals import DEFAULT_SETTINGS, QUICK_SETTINGS, QUICK_SIZES, SUITES, run_suites
    from ..evals.episodes import BackendFailed
    from ..evals.questions_file import QuestionsFileError
    from ..harness import HarnessError

    names = list(SUITES) if suite == "all" else [suite]
    if suite != "all" and suite not in SUITES:
        raise _fail(f"unknown suite '{suite}' (choose from {', '.join(SUITES)}, all)")
    if questions is not None and not questions.is_file():
        raise _fail(f"{questions}: no such file")
    h = _load(harness) if harness else None
    dom = _domain(domain, h)
    h = h or _load(str(dom.harness_dir))
    sizes = dict(QUICK_SIZES) if quick else {}
    if n is not None:
        sizes.update(dict.fromkeys(names, n))
    settings = QUICK_SETTINGS if quick else DEFAULT_SETTINGS
    if max_new_tokens is not None:
        if max_new_tokens < 1:
            raise _fail("--max-new-tokens must be at least 1")
        settings = settings.model_copy(update={"max_new_tokens": max_new_tokens,
                                               "if_max_new_tokens": max_new_tokens})
    bar = LoggedProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                         TimeElapsedColumn(), console=err)
    tasks: dict[str, TaskID] = {}

    def progress(name: str, done: int, total: int) -> None:
        if name not in tasks:
            tasks[name] = bar.add_task(name, total=total)
        bar.update(tasks[name], completed=done, total=total)

    try:
        _check_questions(questions, names, dom.categories)  # before the (slow) model load
        from ..models.select import load_model

        with err.status(f"loading model {model}..."):
            chat = load_model(model)
        with bar:
            results = run_suites(names, chat, sizes=sizes or None, out_dir=out, harness=h, domain=dom,
                                 questions=questions, seed=seed, on_suite=progress,
                                 settings=settings)
    except (QuestionsFileError, HarnessError, DefaultModelError, ValueError, FileNotFoundError,
            BackendFailed) as exc:
        raise _fail(str(exc)) from None
    table = Table("suite", "n", "metric", "value", "seconds")
    for name, r in results.items():
        for i, (key, value) in enumerate(r.metrics.items()):
            table.add_row(name if i == 0 else "", str(r.n) if i == 0 else "", key, f"{value:.4g}",
                          f"{r.seconds:.1f}" if i == 0 else "")
    console.print(table)
    for name, r in results.items():
        _say(f"{name}: {out / (name + '.json')}" + (f" (traces {r.traces})" if r.traces else ""))

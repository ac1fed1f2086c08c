"""`hatkit sim run` and `hatkit data build`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Literal, cast

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TaskID,
    TextColumn,
)
from rich.table import Table

from ..harness import Harness
from ..models.base import ChatModel
from ..models.default_model import DefaultModelError
from ..models.select import MODEL_HELP, load_model
from ..sim.truth import Question
from ._common import (
    DomainOpt,
    LoggedProgress,
    _domain,
    _fail,
    _load,
    _progress_bar,
    _say,
    app,
    console,
    err,
)

sim_app = typer.Typer(help="The simulation environment: run episodes with any policy.",
                      no_args_is_help=True)
data_app = typer.Typer(help="Build training datasets from oracle episodes.", no_args_is_help=True)
app.add_typer(sim_app, name="sim")
app.add_typer(data_app, name="data")





@sim_app.command("run")
def sim_run(
    out: Annotated[Path, typer.Option(help="JSONL file the traces are appended to.")],
    config: Annotated[Path | None, typer.Option(help="YAML settings (see SimConfig); flags "
                                                "given here override it.")] = None,
    policy: Annotated[str, typer.Option(help="'oracle' or a model: " + MODEL_HELP)] = "oracle",
    episodes: Annotated[int | None, typer.Option(help="How many episodes.")] = None,
    split: Annotated[str | None, typer.Option(help="train, dev or test questions.")] = None,
    variants: Annotated[str | None, typer.Option(help="none, train or heldout.")] = None,
    n_variants: Annotated[int | None, typer.Option(help="How many variants of the family.")] = None,
    seed: Annotated[int | None, typer.Option()] = None,
    concurrency: Annotated[int | None, typer.Option(help="Episodes batched together.")] = None,
    resume: Annotated[bool, typer.Option(help="Skip episodes already in OUT.")] = True,
    domain: DomainOpt = None,
) -> None:
    """Run simulated user episodes; resumable; prints a summary."""
    from ..harness import load_harness
    from ..sim.runner import SimConfig, run_sim

    overrides = {"episodes": episodes, "split": split, "variants": variants, "seed": seed,
                 "concurrency": concurrency, "n_variants": n_variants}
    try:
        cfg = (SimConfig.from_file(config, **overrides) if config else
               SimConfig.model_validate({k: v for k, v in overrides.items() if v is not None}))
    except ValueError as exc:
        raise _fail(str(exc)) from None
    dom = _domain(domain, load_harness(cfg.harness) if "harness" in cfg.model_fields_set else None)
    if "harness" not in cfg.model_fields_set:
        cfg = cfg.model_copy(update={"harness": str(dom.harness_dir)})
    if policy == "oracle":
        def factory(h: Harness, qs: Sequence[Question]) -> ChatModel:
            return dom.oracle(h, qs)
    else:
        try:
            backend = load_model(policy)
        except (ValueError, DefaultModelError) as exc:
            raise _fail(str(exc)) from None

        def factory(h: Harness, qs: Sequence[Question]) -> ChatModel:
            return backend
    bar, update = _progress_bar("episodes")
    with bar:
        summary = run_sim(cfg, factory, out, source=dom, resume=resume, on_progress=update)
    _say(f"{summary.written} episodes written, {summary.skipped} already there, "
         f"{summary.seconds:.1f} s ({summary.episodes_per_s:.1f}/s) -> {out}")


@data_app.command("build")
def data_build(
    out: Annotated[Path, typer.Option(help="Output folder (fixed/, hsa/, manifest.json).")],
    train: Annotated[int, typer.Option(help="Training episodes per mode.")] = 400,
    dev: Annotated[int, typer.Option(help="Dev episodes per mode.")] = 100,
    variants: Annotated[int, typer.Option(help="HSA variants in the training family.")] = 16,
    seed: Annotated[int, typer.Option()] = 0,
    locale: Annotated[str, typer.Option(help="en or zh.")] = "en",
    fault_rate: Annotated[float, typer.Option(help="Share of tool calls with a first-attempt "
                                              "fault, to teach recovery.")] = 0.1,
    fmt: Annotated[str, typer.Option("--format", help="parquet or jsonl.")] = "parquet",
    tokenizer: Annotated[str, typer.Option(help="Checkpoint whose tokenizer the token ids are "
                                           "for; 'default' = the embedded model.")] = "default",
    domain: DomainOpt = None,
    harness: Annotated[str | None, typer.Option(help="Base harness folder or shipped name "
                                                "(default: the domain's own).")] = None,
    think: Annotated[str, typer.Option(help="The oracle's reasoning: short (one line per step) or long "
                                       "(1-4 sentences weighing question, rule and tool).")] = "short",
    hsa_base: Annotated[bool, typer.Option(help="HSA rows also run on the base harness, as one "
                                           "configuration among the variants.")] = False,
    hsa_base_share: Annotated[float | None, typer.Option(
        min=0.01, max=0.99, help="With --hsa-base: the share of HSA rows on the base harness, the "
        "rest spread over the variants (default: one configuration among them).")] = None,
) -> None:
    """SFT datasets on the fixed harness and across HSA variants, with a manifest."""
    from transformers import AutoTokenizer

    from ..models.chat_format import ChatTemplateFormat
    from ..models.default_model import ensure_default_model
    from ..train import BuildSettings, build_datasets

    if fmt not in ("parquet", "jsonl"):
        raise _fail("--format must be parquet or jsonl")
    try:
        path = ensure_default_model() if tokenizer == "default" else Path(tokenizer)
        fmt_ = ChatTemplateFormat(AutoTokenizer.from_pretrained(path), native_tools=False)
    except (OSError, ValueError, DefaultModelError) as exc:
        raise _fail(f"cannot load the tokenizer: {exc}") from None
    base = _load(harness) if harness else None
    dom = _domain(domain, base)
    if think not in ("short", "long"):
        raise _fail("--think must be short or long")
    if locale not in dom.locales:
        raise _fail(f"--locale {locale}: domain '{dom.name}' speaks {', '.join(dom.locales)}")
    settings = BuildSettings(out=out, train_episodes=train, dev_episodes=dev, seed=seed,
                             n_variants=variants, locale=locale, fault_rate=fault_rate, fmt=fmt,
                             domain=dom, harness=base.root if base is not None else None,
                             think=cast(Literal["short", "long"], think), hsa_base=hsa_base,
                             hsa_base_share=hsa_base_share)
    bar = LoggedProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=err)
    tasks: dict[str, TaskID] = {}

    def update(label: str, done: int, total: int) -> None:
        if label not in tasks:
            tasks[label] = bar.add_task(label, total=total)
        bar.update(tasks[label], completed=done)

    with bar:
        manifest = build_datasets(settings, fmt_, progress=update)
    table = Table("mode", "split", "rows", "harnesses", "with faults", "trained tokens")
    for mode, splits in manifest["modes"].items():
        for split, info in splits.items():
            table.add_row(mode, split, str(info["rows"]), str(len(info["harness_hashes"])),
                          str(info["with_faults"]), str(info["trained_tokens"]))
    console.print(table)
    _say(f"splits disjoint by product and template: {manifest['disjoint']['ok']}; "
         f"manifest: {out / 'manifest.json'}")



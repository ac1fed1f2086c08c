"""The `hatkit` command: one sub-command per job. Thin: parsing and printing only."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from .agent import Agent, write_traces
from .agent.loop import generate_safely
from .agent.render import trace_lines, trace_summary
from .harness import Harness, HarnessError, load_harness
from .harness.diff import diff_harnesses
from .harness.versioning import HarnessRepo, VersioningError
from .models.base import ChatModel
from .models.default_model import DefaultModelError
from .models.select import MODEL_HELP, load_model
from .sim.questions import Question

app = typer.Typer(help="hatkit: Harness-Aware Training of tool-calling agents.",
                  no_args_is_help=True, pretty_exceptions_enable=False)
harness_app = typer.Typer(help="Validate, inspect, render and version a harness folder.",
                          no_args_is_help=True)
model_app = typer.Typer(help="The embedded default model (SmolLM2-135M-Instruct).",
                        no_args_is_help=True)
app.add_typer(harness_app, name="harness")
app.add_typer(model_app, name="model")

console = Console()
err = Console(stderr=True, soft_wrap=True)

HarnessArg = Annotated[str, typer.Argument(
    help="A harness folder, or the name of a shipped one (e.g. live_commerce).")]


def _say(text: str) -> None:
    """One line that must not wrap (hashes, paths), with markup but no auto-highlighting."""
    console.print(text, highlight=False, soft_wrap=True)


def _fail(message: str, code: int = 1) -> typer.Exit:
    err.print(f"[red]error:[/] {message}", markup=True, highlight=False)
    return typer.Exit(code)


def _load(ref: str) -> Harness:
    try:
        return load_harness(ref)
    except HarnessError as exc:
        err.print(f"[red]invalid harness[/] {exc.root}", highlight=False)
        for p in exc.problems:
            err.print(f"  {p}", markup=False, highlight=False)
        raise typer.Exit(1) from None
    except FileNotFoundError as exc:
        raise _fail(str(exc)) from None


def _repo(folder: str) -> HarnessRepo:
    try:
        return HarnessRepo(folder)
    except VersioningError as exc:
        raise _fail(str(exc)) from None


@harness_app.command("validate")
def harness_validate(harness: HarnessArg = "live_commerce") -> None:
    """Check a harness folder; print every problem as file:line: message."""
    h = _load(harness)
    _say(f"[green]ok[/] {h.name} {h.content_hash}")


@harness_app.command("hash")
def harness_hash(harness: HarnessArg = "live_commerce") -> None:
    """Print the content hash (stable across copies, key order and line endings)."""
    print(_load(harness).content_hash)


@harness_app.command("show")
def harness_show(harness: HarnessArg = "live_commerce") -> None:
    """Summarise a harness: settings, rules, and what is enabled."""
    h = _load(harness)
    _say(f"[bold]{h.name}[/]  {h.content_hash[:12]}  {h.root}")
    console.print(h.spec.description)
    console.print(f"locale {h.spec.locale} (ships {', '.join(h.spec.locales)}); "
                  f"model {h.spec.model.model_dump()}; limits {h.spec.limits.model_dump()}")
    rules = Table("rule", "value", title="rules")
    for k, v in h.spec.rules.items():
        rules.add_row(k, json.dumps(v, ensure_ascii=False))
    console.print(rules)
    parts = Table("kind", "name", "details", title="enabled")
    for s in h.enabled_skills():
        parts.add_row("skill", s.name, s.description)
    for t in h.enabled_tools():
        parts.add_row("tool", t.name, f"{t.kind}, needs {t.permission or '-'}")
    for name in h.spec.enabled.hooks:
        rule = h.hook_rules.get(name)
        parts.add_row("hook", name, f"{rule.kind} on {rule.event}" if rule else "python hook")
    console.print(parts)
    console.print(f"permissions granted: {', '.join(h.spec.permissions) or '-'}")


@harness_app.command("render")
def harness_render(
    harness: HarnessArg = "live_commerce",
    locale: Annotated[str | None, typer.Option(help="Render another shipped locale, e.g. zh.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print system prompt and tool "
                                          "schemas as one JSON object.")] = False,
) -> None:
    """Print exactly what the model sees: the system prompt, tool schemas and skill list."""
    h = _load(harness)
    try:
        r = h.render(locale)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if as_json:
        print(json.dumps({"harness": r.harness_name, "hash": r.harness_hash, "locale": r.locale,
                          "system_prompt": r.system_prompt, "tools": r.tools,
                          "skills": [{"name": n, "description": d} for n, d in r.skills]},
                         ensure_ascii=False, indent=2))
    else:
        sys.stdout.write(r.system_prompt)


@harness_app.command("commit")
def harness_commit(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    message: Annotated[str, typer.Option("-m", "--message", help="Commit message.")],
) -> None:
    """Validate, then commit the harness folder (only it) with its content hash."""
    repo = _repo(folder)
    _load(folder)
    try:
        entry = repo.commit(message)
    except VersioningError as exc:
        raise _fail(str(exc)) from None
    _say(f"committed {entry.sha[:12]}  harness {entry.harness_hash}")


@harness_app.command("log")
def harness_log(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    limit: Annotated[int, typer.Option("-n", help="Show at most this many commits.")] = 20,
) -> None:
    """List the commits that touched the harness, newest first, with hashes and tags."""
    table = Table("commit", "date", "harness hash", "tags", "subject")
    for e in _repo(folder).log(limit):
        table.add_row(e.sha[:12], e.when.strftime("%Y-%m-%d %H:%M"),
                      (e.harness_hash or "-")[:12], ", ".join(e.tags), e.subject)
    console.print(table)


@harness_app.command("diff")
def harness_diff(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    rev_a: Annotated[str, typer.Argument(help="Older revision (commit, tag, HEAD~1...).")],
    rev_b: Annotated[str | None, typer.Argument(help="Newer revision; default: the working "
                                                "folder.")] = None,
) -> None:
    """What changed between two versions: rules, settings, skills, tools, hooks, prompts."""
    repo = _repo(folder)
    with tempfile.TemporaryDirectory(prefix="hatkit-diff-") as tmp:
        try:
            a = _load(str(repo.materialize(rev_a, Path(tmp) / "a")))
            b = _load(str(repo.materialize(rev_b, Path(tmp) / "b"))) if rev_b else _load(folder)
        except VersioningError as exc:
            raise _fail(str(exc)) from None
        for line in diff_harnesses(a, b).lines():
            print(line)


@harness_app.command("tag")
def harness_tag(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    name: Annotated[str, typer.Argument(help="Tag name, e.g. week-48.")],
    rev: Annotated[str, typer.Option(help="Revision to tag.")] = "HEAD",
    message: Annotated[str | None, typer.Option("-m", "--message")] = None,
) -> None:
    """Tag a harness commit (annotated tag carrying the harness hash)."""
    try:
        sha = _repo(folder).tag(name, rev, message)
    except VersioningError as exc:
        raise _fail(str(exc)) from None
    _say(f"tagged {sha[:12]} as {name}")


@harness_app.command("rollback")
def harness_rollback(
    folder: Annotated[str, typer.Argument(help="Harness folder inside a git repository.")],
    rev: Annotated[str, typer.Argument(help="Revision to restore (commit, tag, HEAD~1...).")],
    force: Annotated[bool, typer.Option(help="Discard uncommitted changes in the folder.")] = False,
    commit: Annotated[bool, typer.Option(help="Record the rollback as a commit.")] = True,
) -> None:
    """Restore the folder byte for byte as it was at REV."""
    try:
        restored = _repo(folder).rollback(rev, force=force, commit=commit)
    except VersioningError as exc:
        raise _fail(str(exc)) from None
    _say(f"restored {folder} to {rev}; harness {restored}")


@model_app.command("prepare")
def model_prepare() -> None:
    """Convert the packaged GGUF into the local safetensors cache (once; verified after)."""
    from .models import DefaultModelError, ensure_default_model

    try:
        path = ensure_default_model()
    except DefaultModelError as exc:
        raise _fail(str(exc)) from None
    _say(f"default model ready at {path}")


@model_app.command("status")
def model_status() -> None:
    """Say whether the default model cache is complete and matches its source."""
    from .models import cache_status

    st = cache_status()
    _say(f"{'ok' if st.ok else 'not ready'}: {st.path} ({st.reason})")
    raise typer.Exit(0 if st.ok else 1)


ModelOpt = Annotated[str, typer.Option("--model", "-m", help=MODEL_HELP)]
HarnessOpt = Annotated[str, typer.Option(help="Harness folder or shipped name.")]
LocaleOpt = Annotated[str | None, typer.Option(help="Render another shipped locale, e.g. zh.")]


def _agent(harness: str, model: str, locale: str | None) -> Agent:
    h = _load(harness)
    try:
        with err.status("loading the model..."):
            backend = load_model(model)
        return Agent(h, backend, locale=locale)
    except (ValueError, DefaultModelError) as exc:
        raise _fail(str(exc)) from None


@app.command("demo")
def demo(
    harness: HarnessOpt = "live_commerce",
    question: Annotated[list[str] | None, typer.Option(
        "--question", "-q", help="A viewer question (repeat for several); default: 10 samples.")] = None,
    model: ModelOpt = "local",
    locale: LocaleOpt = None,
    show_prompt: Annotated[bool, typer.Option(help="Print the rendered system prompt.")] = False,
) -> None:
    """Quick start: viewer questions through the agent loop, with tool calls and latency."""
    from .demo import run_demo

    _load(harness)
    try:
        run_demo(harness, question, model, locale, show_prompt, console=console)
    except (DefaultModelError, ValueError) as exc:
        raise _fail(str(exc)) from None


@app.command("ask")
def ask(
    question: Annotated[str, typer.Argument(help="The viewer message.")],
    harness: HarnessOpt = "live_commerce",
    model: ModelOpt = "local",
    locale: LocaleOpt = None,
    trace: Annotated[Path | None, typer.Option(help="Append the trace to this JSONL file.")] = None,
) -> None:
    """Answer one viewer message; print the reply and a summary of the trace."""
    agent = _agent(harness, model, locale)
    result = agent.run(question)
    console.print(trace_summary(result))
    if trace is not None:
        trace.parent.mkdir(parents=True, exist_ok=True)
        write_traces(trace, [result])
        _say(f"trace appended to {trace}")


@app.command("chat")
def chat(
    harness: HarnessOpt = "live_commerce",
    model: ModelOpt = "local",
    locale: LocaleOpt = None,
    trace: Annotated[Path | None, typer.Option(help="Write the conversation's trace here on exit.")] = None,
) -> None:
    """Talk to the agent as a viewer; tool calls are shown as they happen. Ctrl-D to quit."""
    agent = _agent(harness, model, locale)
    episode = agent.episode()
    _say(f"[bold]{agent.harness.name}[/] on {agent.model.model_id}. Type a message; Ctrl-D quits.")
    while True:
        try:
            text = console.input("[bold]viewer> [/]")
        except (EOFError, KeyboardInterrupt):
            break
        if not text.strip():
            continue
        step = episode.ask(text)
        seen = len(episode.trace.spans)
        try:
            request = next(step)
            while True:
                out = generate_safely(agent.model, [request])[0]
                request = step.send(out)
                for line in trace_lines(episode.trace.spans[seen:]):
                    console.print(line)
                seen = len(episode.trace.spans)
        except StopIteration as done:
            for line in trace_lines(episode.trace.spans[seen:]):
                console.print(line)
            console.print(Text.assemble(("host: ", "bold green"), str(done.value)))
    if trace is not None:
        write_traces(trace, [episode.trace])
        _say(f"trace written to {trace}")


sim_app = typer.Typer(help="The simulation environment: run episodes with any policy.",
                      no_args_is_help=True)
data_app = typer.Typer(help="Build training datasets from oracle episodes.", no_args_is_help=True)
app.add_typer(sim_app, name="sim")
app.add_typer(data_app, name="data")


def _progress_bar(label: str) -> tuple[Progress, Callable[[int, int], None]]:
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TimeRemainingColumn(), console=err)
    task = bar.add_task(label, total=None)

    def update(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    return bar, update


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
) -> None:
    """Run simulated viewer episodes; resumable; prints a summary."""
    from .sim.oracle import OraclePolicy
    from .sim.runner import SimConfig, run_sim

    overrides = {"episodes": episodes, "split": split, "variants": variants, "seed": seed,
                 "concurrency": concurrency, "n_variants": n_variants}
    try:
        cfg = (SimConfig.from_file(config, **overrides) if config else
               SimConfig.model_validate({k: v for k, v in overrides.items() if v is not None}))
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if policy == "oracle":
        def factory(h: Harness, qs: Sequence[Question]) -> ChatModel:
            return OraclePolicy(h, qs)
    else:
        try:
            backend = load_model(policy)
        except (ValueError, DefaultModelError) as exc:
            raise _fail(str(exc)) from None

        def factory(h: Harness, qs: Sequence[Question]) -> ChatModel:
            return backend
    bar, update = _progress_bar("episodes")
    with bar:
        summary = run_sim(cfg, factory, out, resume=resume, on_progress=update)
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
) -> None:
    """SFT datasets on the fixed harness and across HSA variants, with a manifest."""
    from transformers import AutoTokenizer

    from .models.chat_format import ChatTemplateFormat
    from .models.default_model import ensure_default_model
    from .train.dataset import BuildSettings, build_datasets

    if fmt not in ("parquet", "jsonl"):
        raise _fail("--format must be parquet or jsonl")
    try:
        path = ensure_default_model() if tokenizer == "default" else Path(tokenizer)
        fmt_ = ChatTemplateFormat(AutoTokenizer.from_pretrained(path), native_tools=False)
    except (OSError, ValueError, DefaultModelError) as exc:
        raise _fail(f"cannot load the tokenizer: {exc}") from None
    settings = BuildSettings(out=out, train_episodes=train, dev_episodes=dev, seed=seed,
                             n_variants=variants, locale=locale, fault_rate=fault_rate, fmt=fmt)
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), console=err)
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


judge_app = typer.Typer(help="Agent-as-a-Judge: judge traces, calibrate the judge, report.",
                        no_args_is_help=True)
app.add_typer(judge_app, name="judge")
JudgeOpt = Annotated[str, typer.Option("--judge", help="Judge harness folder (default: the shipped "
                                       "live_commerce judge).")]


def _judge(judge_dir: str, model: str | None, role: str) -> Any:
    from .judge.llm import LLMJudge
    from .judge.programmatic import JUDGE_HARNESS, ProgrammaticJudge

    harness = _load(judge_dir or str(JUDGE_HARNESS))
    if role not in ("reward", "eval"):
        raise _fail("--role must be reward or eval")
    if model is None:
        return ProgrammaticJudge(harness, role=role)  # type: ignore[arg-type]
    try:
        return LLMJudge(harness, load_model(model), role=role)  # type: ignore[arg-type]
    except (ValueError, DefaultModelError) as exc:
        raise _fail(str(exc)) from None


def _agent_harnesses(refs: list[str], traces_path: Path) -> dict[str, Harness]:
    """Harnesses by content hash: the ones named, plus variants written beside the traces."""
    out = {}
    for ref in refs or ["live_commerce"]:
        h = _load(ref)
        out[h.content_hash] = h
    variants = traces_path.parent / "variants"
    if variants.is_dir():
        for folder in sorted(p for p in variants.iterdir() if (p / "harness.yaml").is_file()):
            h = _load(str(folder))
            out[h.content_hash] = h
    return out


@judge_app.command("run")
def judge_run(
    traces: Annotated[Path, typer.Option(help="JSONL traces to judge.")],
    out: Annotated[Path, typer.Option(help="JSONL file the verdicts are written to.")],
    harness: Annotated[list[str] | None, typer.Option(help="Harness(es) the agent ran under "
                       "(repeat); variants beside the traces are found automatically.")] = None,
    judge: JudgeOpt = "",
    model: Annotated[str | None, typer.Option(help="Run the judge harness with this model (LLM "
                                              "judge) instead of the programmatic judge.")] = None,
    role: Annotated[str, typer.Option(help="reward or eval.")] = "eval",
) -> None:
    """Judge every trace; write verdicts; print mean scores and pass rates."""
    from .agent import read_traces

    j = _judge(judge, model, role)
    by_hash = _agent_harnesses(harness or [], traces)
    try:
        items = list(read_traces(traces))
    except (OSError, ValueError) as exc:
        raise _fail(str(exc)) from None
    missing = sorted({t.harness_hash[:12] for t in items if t.harness_hash not in by_hash})
    if missing:
        raise _fail(f"no harness given for hash(es) {', '.join(missing)}; pass --harness")
    bar, update = _progress_bar("judging")
    verdicts = []
    with bar:
        for i, t in enumerate(items, 1):
            verdicts.append(j.judge(t, by_hash[t.harness_hash]))
            update(i, len(items))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(v.to_json() + "\n" for v in verdicts), encoding="utf-8")
    ok = [v for v in verdicts if v.error is None]
    table = Table("judge", "role", "traces", "errors", "accuracy", "effectiveness",
                  "accuracy pass", "effectiveness pass")
    thresholds = getattr(j, "thresholds", {"accuracy": 0.5, "effectiveness": 0.5})
    n = max(1, len(ok))
    table.add_row(j.name, j.role, str(len(verdicts)), str(len(verdicts) - len(ok)),
                  f"{sum(v.accuracy for v in ok) / n:.3f}", f"{sum(v.effectiveness for v in ok) / n:.3f}",
                  f"{sum(v.passed('accuracy', thresholds['accuracy']) for v in ok) / n:.1%}",
                  f"{sum(v.passed('effectiveness', thresholds['effectiveness']) for v in ok) / n:.1%}")
    console.print(table)
    _say(f"verdicts written to {out}")


@judge_app.command("calibrate")
def judge_calibrate(
    log: Annotated[Path, typer.Option(help="Rounds log (JSONL); a round is appended.")] = Path(
        "runs/judge/rounds.jsonl"),
    judge: JudgeOpt = "",
    n: Annotated[int, typer.Option(help="Items in each of the calibration and held-out sets.")] = 200,
    seed: Annotated[int, typer.Option()] = 0,
    notes: Annotated[str, typer.Option(help="What changed in the judge harness this round.")] = "",
) -> None:
    """One calibration round: the judge against reference labels on a calibration set (train
    split) and a disjoint held-out set (dev split); appended to the rounds log."""
    from .judge.calibrate import report_table, run_round
    from .judge.planted import build_labelled_set

    j = _judge(judge, None, "eval")
    with err.status("building the labelled sets (oracle episodes with planted errors)..."):
        cal = build_labelled_set(n, seed, "train")
        held = build_labelled_set(n, seed + 1, "dev")
    try:
        rnd = run_round(j, cal, held, log, notes=notes)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    print(report_table([rnd]))
    for flag in rnd.flags:
        err.print(Text(f"note: {flag}", style="yellow"))
    _say(f"round {rnd.round} ({rnd.judge_hash[:12]}) appended to {log}; labels are reference "
         "labels from the simulator's ground truth, not human labels")


@judge_app.command("report")
def judge_report(
    log: Annotated[Path, typer.Option(help="Rounds log (JSONL).")] = Path("runs/judge/rounds.jsonl"),
    png: Annotated[Path, typer.Option(help="Plot of agreement by round.")] = Path(
        "runs/judge/agreement.png"),
) -> None:
    """Agreement by calibration round: a table, and a plot (calibration vs held-out)."""
    from .judge.calibrate import report

    if not log.is_file():
        raise _fail(f"{log} does not exist; run `hatkit judge calibrate` first")
    try:
        print(report(log, png))
    except ValueError as exc:
        raise _fail(str(exc)) from None
    _say(f"plot written to {png}")


@judge_app.command("agree")
def judge_agree(
    traces: Annotated[Path, typer.Option(help="JSONL traces the labels refer to.")],
    labels: Annotated[Path, typer.Option(help="Labels (CSV or JSONL: trace_id, dimension, label, "
                                         "annotator).")],
    harness: Annotated[list[str] | None, typer.Option(help="Harness(es) the agent ran under.")] = None,
    judge: JudgeOpt = "",
    annotator: Annotated[str | None, typer.Option(help="Only this annotator's labels.")] = None,
) -> None:
    """Agreement of the judge with imported labels (human or reference): percent, Cohen's
    kappa, confusion matrix and the disagreements."""
    from .agent import read_traces
    from .judge.agreement import judge_agreement
    from .judge.labels import LabelError, load_labels

    j = _judge(judge, None, "eval")
    try:
        items = list(read_traces(traces))
        imported = load_labels(labels)
    except (OSError, ValueError, LabelError) as exc:
        raise _fail(str(exc)) from None
    by_hash = _agent_harnesses(harness or [], traces)
    verdicts = [j.judge(t, by_hash[t.harness_hash]) for t in items if t.harness_hash in by_hash]
    result = judge_agreement(verdicts, imported, annotator=annotator, thresholds=j.thresholds)
    table = Table("dimension", "n", "agreement", "kappa", "judge pass / ref fail", "judge fail / ref pass")
    for dim, r in result.items():
        c = r.confusion
        table.add_row(dim, str(r.n), f"{c.agreement:.1%}" if c.n else "-",
                      f"{c.kappa:.2f}" if c.kappa is not None else "-", str(c.a1_b0), str(c.a0_b1))
    console.print(table)
    for dim, r in result.items():
        for d in r.disagreements[:10]:
            console.print(Text(f"  {dim} {d.trace_id}: judge {d.judge} vs label {d.reference} "
                               f"{d.note} " + "; ".join(e.claim for e in d.evidence[:3])))


bench_app = typer.Typer(help="Benchmarks that ship with hatkit.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("latency", context_settings={"allow_extra_args": True,
                                                "ignore_unknown_options": True})
def bench_latency(ctx: typer.Context) -> None:
    """Turn latency (p50/p95/p99, first token, tokens/s) at concurrency 1-8, and greedy vs
    prompt-lookup decoding. Options are passed through: `hatkit bench latency -- --help`."""
    from .serve.latency import main as latency_main

    latency_main(list(ctx.args))


@app.command("serve")
def serve_cmd(
    harness: HarnessOpt = "live_commerce",
    model: ModelOpt = "local",
    host: Annotated[str, typer.Option(help="Bind address (loopback unless --allow-remote).")] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    allow_remote: Annotated[bool, typer.Option(help="Allow a non-loopback bind address.")] = False,
    max_concurrency: Annotated[int, typer.Option(help="Turns run at once; beyond: 429.")] = 4,
    timeout: Annotated[float, typer.Option(help="Per-request timeout in seconds (504).")] = 60.0,
    release: Annotated[list[str] | None, typer.Option(help="NAME=DIR of another harness release "
                                                      "for hot swap / rollback (repeat).")] = None,
) -> None:
    """Serve the harness agent over HTTP: OpenAI-compatible chat completions, live messages,
    health, Prometheus metrics, bounded concurrency and harness hot swap."""
    from .serve.app import serve

    releases: dict[str, str | Harness] = {}
    for item in release or []:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            raise _fail(f"--release expects NAME=DIR, got '{item}'")
        releases[name] = _load(folder)
    try:
        serve(_load(harness), model, host=host, port=port, allow_remote=allow_remote,
              max_concurrency=max_concurrency, request_timeout_s=timeout, harnesses=releases or None)
    except (ValueError, DefaultModelError) as exc:
        raise _fail(str(exc)) from None


def main() -> None:
    app()

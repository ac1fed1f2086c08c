"""`hatkit judge ...`: judge traces, calibrate, report, agreement."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from ..harness import Harness
from ..models.default_model import DefaultModelError
from ..models.select import load_model
from ._common import (
    DomainOpt,
    _domain,
    _fail,
    _harness_for,
    _load,
    _progress_bar,
    _say,
    app,
    console,
    err,
)

judge_app = typer.Typer(help="Agent-as-a-Judge: judge traces, calibrate the judge, report.",
                        no_args_is_help=True)
app.add_typer(judge_app, name="judge")
JudgeOpt = Annotated[str, typer.Option("--judge", help="Judge harness folder (default: the "
                                       "domain's own judge).")]


def _judge(judge_dir: str, model: str | None, role: str, domain: str | None = None) -> Any:
    from ..judge.llm import LLMJudge

    dom = _domain(domain)
    harness = _load(judge_dir or str(dom.judge_harness_dir))
    if role not in ("reward", "eval"):
        raise _fail("--role must be reward or eval")
    if model is None:
        return dom.judge(harness, role=role)  # type: ignore[arg-type]
    try:
        return LLMJudge(harness, load_model(model), role=role,  # type: ignore[arg-type]
                        state_for=dom.judge_state)
    except (ValueError, DefaultModelError) as exc:
        raise _fail(str(exc)) from None


def _agent_harnesses(refs: list[str], traces_path: Path, domain: str | None = None) -> dict[str, Harness]:
    """Harnesses by content hash: the ones named (default: the domain's), plus variants written
    beside the traces."""
    out = {}
    for ref in refs or [str(_domain(domain).harness_dir)]:
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
    domain: DomainOpt = None,
    model: Annotated[str | None, typer.Option(help="Run the judge harness with this model (LLM "
                                              "judge) instead of the programmatic judge.")] = None,
    role: Annotated[str, typer.Option(help="reward or eval.")] = "eval",
) -> None:
    """Judge every trace; write verdicts; print mean scores and pass rates."""
    from ..agent import read_traces

    j = _judge(judge, model, role, domain)
    by_hash = _agent_harnesses(harness or [], traces, domain)
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
    domain: DomainOpt = None,
    n: Annotated[int, typer.Option(help="Items in each of the calibration and held-out sets.")] = 200,
    seed: Annotated[int, typer.Option()] = 0,
    notes: Annotated[str, typer.Option(help="What changed in the judge harness this round.")] = "",
    families: Annotated[Path | None, typer.Option(
        help="Labelled conversations written without the judge's checks, reported per family "
             "(default: the domain's calibration file, when it ships one).")] = None,
) -> None:
    """One calibration round: the judge against reference labels on a calibration set (train
    split) and a disjoint held-out set (dev split), and per family on independently written
    conversations (leave-one-family-out); appended to the rounds log."""
    from ..judge.calibrate import report_table, run_round
    from ..judge.conversations import family_report, load_conversations, load_split, split_file

    j = _judge(judge, None, "eval", domain)
    with err.status("building the labelled sets (oracle episodes with planted errors)..."):
        dom = _domain(domain)
        try:
            cal = dom.labelled_set(n=n, seed=seed, split="train")
            held = dom.labelled_set(n=n, seed=seed + 1, split="dev")
        except NotImplementedError as exc:
            raise _fail(str(exc)) from None
    by_family: dict[str, Any] = {}
    alarms: dict[str, Any] = {}
    if (source := families or dom.independent_labels) is not None:
        try:
            convs = load_conversations(source)
            fsplit = load_split(split_file(source), convs) if split_file(source).is_file() else None
            result = family_report(j, convs, dom.harness(), fsplit)
        except (OSError, ValueError) as exc:
            raise _fail(str(exc)) from None
        by_family, alarms = result["families"], result["false_alarms"]
    try:
        rnd = run_round(j, cal, held, log, notes=notes, families=by_family, false_alarms=alarms)
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
    from ..judge.calibrate import report

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
    domain: DomainOpt = None,
    annotator: Annotated[str | None, typer.Option(help="Only this annotator's labels.")] = None,
) -> None:
    """Agreement of the judge with imported labels (human or reference): percent, Cohen's
    kappa, confusion matrix and the disagreements."""
    from ..agent import read_traces
    from ..judge.agreement import judge_agreement
    from ..judge.labels import LabelError, load_labels

    j = _judge(judge, None, "eval", domain)
    try:
        items = list(read_traces(traces))
        imported = load_labels(labels)
    except (OSError, ValueError, LabelError) as exc:
        raise _fail(str(exc)) from None
    by_hash = _agent_harnesses(harness or [], traces, domain)
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




def family_table(result: dict[str, Any]) -> Table:
    """Rows per family (dev ones, then sealed ones, then the totals) with 95% intervals."""
    groups: dict[str, str] = result.get("groups", {})
    order = {"dev": 0, "sealed": 1, "unassigned": 2}
    table = Table("family", "split", "n", "accuracy agreement [95%]", "effectiveness agreement [95%]")

    def key(family: str) -> tuple[int, int, str]:
        total = family == "all" or family.startswith("all ")
        return (int(total), order.get(groups.get(family, family[4:] if total else ""), 3), family)

    for family in sorted(result["families"], key=key):
        dims = result["families"][family]
        cells = [f"{a['agree']}/{a['n']} {a['rate']:.0%} [{a['lo']:.0%}, {a['hi']:.0%}]"
                 for a in (dims["accuracy"], dims["effectiveness"])]
        table.add_row(family, groups.get(family, ""), str(dims["accuracy"]["n"]), *cells)
    return table


def family_summary(result: dict[str, Any], judge_name: str) -> list[str]:
    """The false-alarm lines: the rate of clean conversations failed, with its interval."""
    lines = []
    for key, what in (("false_alarms", "sealed clean" if "false_alarms_dev" in result else "clean"),
                      ("false_alarms_dev", "dev clean")):
        if (a := result.get(key)) is None:
            continue
        failed = a["n"] - a["agree"]
        rate = failed / a["n"] if a["n"] else 0.0
        lines.append(f"false alarms on {what} conversations: {failed}/{a['n']} ({rate:.0%}, 95% "
                     f"[{1 - a['hi']:.0%}, {1 - a['lo']:.0%}]); judge {judge_name}")
    return lines


@judge_app.command("families")
def judge_families(
    labels: Annotated[Path, typer.Option(help="Labelled conversations (JSONL: id, family, locale, "
                                         "messages, labels; see hatkit.judge.conversations).")],
    domain: DomainOpt = None,
    harness: Annotated[str | None, typer.Option(help="Harness the conversations ran under "
                                                "(default: the domain's).")] = None,
    judge: JudgeOpt = "",
    split: Annotated[Path | None, typer.Option(help="Family split (YAML: dev, sealed, clean_dev_ids): "
                                               "which families the checks were developed on. Default: "
                                               "<labels stem>.split.yaml beside the labels, if any.")] = None,
    out: Annotated[Path | None, typer.Option(help="Also write the table as JSON here.")] = None,
) -> None:
    """Agreement of the judge with labelled conversations per error family, with 95% intervals,
    and its false alarms on the clean ones. Families written without reading the judge's
    checks measure whether it generalises (leave-one-family-out); with a split, the families
    the checks were developed on (dev) are reported apart from the sealed ones."""
    import json

    from ..judge.conversations import (
        ConversationError,
        family_report,
        load_conversations,
        load_split,
        split_file,
    )

    j = _judge(judge, None, "eval", domain)
    h = _harness_for(harness, domain)
    try:
        convs = load_conversations(labels)
        split_path = split or (split_file(labels) if split_file(labels).is_file() else None)
        fsplit = load_split(split_path, convs) if split_path is not None else None
    except (OSError, ConversationError) as exc:
        raise _fail(str(exc)) from None
    result = family_report(j, convs, h, fsplit)
    console.print(family_table(result))
    for line in family_summary(result, j.name):
        _say(line)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"judge": j.name, "judge_hash": j.judge_hash, "labels": str(labels),
                                   "split": str(split_path) if split_path else None, **result},
                                  indent=1, ensure_ascii=False) + "\n")
        _say(f"written to {out}")

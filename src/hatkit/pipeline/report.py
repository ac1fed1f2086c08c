"""`runs/<id>/report.md` and a self-contained `report.html`: the ablation table, the published
system's four claims checked against the numbers measured here, plots, and the stage log.

The headline per model is success with its 95% interval. Models are compared on the same
cases with a paired test (hatkit.evals.paired), for each adjacent pair of models and for the
claims, stated as measured whichever way they fall: with the quick profile's small
evaluation sets most differences are "too close to call", and the report says so.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import jinja2

from ..evals.paired import BETTER, CLOSE, WORSE, Paired, align, compare, compare_values, drops
from ..evals.stats import mean_difference, mean_interval
from .config import PipelineConfig
from .detectable import detectable_effects
from .plots import drop_plot, lengths_plot, scores_plot
from .stages import EVOLVE, ROW_BY_KEY, RunDir, plan
from .table import COLUMNS, by_title, fmt_cell, markdown_table, read_results, table_rows, value
from .training_data import training_data_lines

_TEMPLATE = Path(__file__).with_name("report.html.j2")


Results = dict[str, dict[str, dict[str, Any]]]


def _value(results: Results, row: str, title: str) -> float | None:
    return value(results.get(row, {}), by_title(title))


def _n(results: Results, row: str, suite: str) -> int:
    n = results.get(row, {}).get(suite, {}).get("n", 0)
    return int(n) if isinstance(n, int | float) else 0


def _suite(results: Results, row: str, suite: str) -> dict[str, Any]:
    return results.get(row, {}).get(suite, {})


SUCCESS_NOTE = (
    "Success is the share of episodes that succeed: no harness fallback, no wrong claim or failed "
    "policy item, every fact asked for stated, escalation only when expected (and then with the "
    "escalation tool); [lo, hi] is its 95% Wilson interval. The variant drop is live_qa - variant_qa "
    "success (lower is better); general_if and faults recovered are pass rates; think lengths are mean "
    "tokens per reasoning block (one per model call); latency is per agent-loop turn. The judge's mean "
    "accuracy and effectiveness are in the suite files and the appendix.")
PAIRED_NOTE = (
    "Each model against the one before it, on the same cases: better or worse only when the exact "
    "McNemar test on the cases one solved and the other did not gives p < 0.05 and the paired "
    "bootstrap 95% interval of the difference in success excludes 0; otherwise too close to call.")
LENGTH_CHANGE = 0.05
"""A relative change in think lengths below this counts as no change."""
PAIRS = (("fixed_sft", "base"), ("hsa_sft", "fixed_sft"), ("opd", "hsa_sft"), ("hat", "opd"),
         ("hat", "fixed_sft"))
"""(model, against) for the paired verdicts: each training step against the one before it,
and the full system against fixed-harness SFT."""
QA_SUITES = ("live_qa", "variant_qa")
_HOLDS = {BETTER: "yes", WORSE: "no", CLOSE: CLOSE}
"""A paired verdict on a claim's expected direction, as the claim's answer."""


def _describe(p: Paired) -> str:
    return (f"{p.other_rate:.2f} vs {p.base_rate:.2f} on {p.n} paired cases, difference {p.diff:+.2f} "
            f"[{p.lo:+.2f}, {p.hi:+.2f}], {p.other_only} won / {p.base_only} lost, McNemar p={p.p:.3g}")


def _pair(make: Callable[[], Paired]) -> tuple[Paired | None, str]:
    """A paired comparison and its description, or None and why it could not be made."""
    try:
        p = make()
    except ValueError as exc:
        return None, f"not paired: {exc}"
    return p, _describe(p)


def paired_verdicts(results: Results) -> list[dict[str, str]]:
    """Per QA suite, each adjacent pair of models compared on the same cases: better, worse, or
    too close to call (exact McNemar p < 0.05 and a paired bootstrap CI excluding 0)."""
    out = []
    for suite in QA_SUITES:
        for model, against in PAIRS:
            base, other = _suite(results, against, suite), _suite(results, model, suite)
            if not base or not other:
                continue
            p, measured = _pair(partial(compare, base, other))
            out.append({"suite": suite, "pair": f"{ROW_BY_KEY[model].label} vs {ROW_BY_KEY[against].label}",
                        "verdict": p.verdict if p is not None else "not compared", "measured": measured})
    return out


def findings(results: Results) -> list[dict[str, str]]:
    """The published system's claims, each with the figures measured in this run and a
    verdict from a paired comparison on the same cases: yes, no, or too close to call."""

    def v(row: str, title: str) -> float | None:
        return _value(results, row, title)

    out = []
    fixed, hsa = v("fixed_sft", "variant drop"), v("hsa_sft", "variant drop")
    if fixed is not None and hsa is not None:
        p, note = _pair(lambda: compare_values(*align(
            drops(_suite(results, "hsa_sft", "live_qa"), _suite(results, "hsa_sft", "variant_qa")),
            drops(_suite(results, "fixed_sft", "live_qa"), _suite(results, "fixed_sft", "variant_qa")))))
        out.append({"claim": "HSA keeps the variant drop small where fixed-harness SFT loses more",
                    "measured": f"success drop HSA-SFT {hsa:+.3f} vs Fixed-SFT {fixed:+.3f}; per-case drop, "
                                f"Fixed-SFT vs HSA-SFT: {note}",
                    "holds": _HOLDS[p.verdict] if p is not None else CLOSE,
                    "n": f"{_n(results, 'hsa_sft', 'variant_qa')} variant items per model", "key": "1"})
    if (general := _general_if_claim(results)) is not None:
        out.append(general)
    if (lengths := _lengths_claim(results)) is not None:
        out.append(lengths)
    return out


def _general_if_claim(results: Results) -> dict[str, str] | None:
    """Claim 2 as published: against the base model, fixed-harness SFT loses instruction
    following (IFEval -7.7 points) and HAT, with General OPD, does not (+2.0); so HAT vs
    Fixed-SFT on the same prompts. Where those two were not both run, +OPD vs HSA-SFT."""
    pair = next(((a, b) for a, b in (("hat", "fixed_sft"), ("opd", "hsa_sft"))
                 if _suite(results, a, "general_if") and _suite(results, b, "general_if")), None)
    if pair is None:
        return None
    model, against = pair
    p, note = _pair(lambda: compare(_suite(results, against, "general_if"),
                                    _suite(results, model, "general_if")))
    col = by_title("general_if")
    scores = ", ".join(f"{ROW_BY_KEY[k].label} {fmt_cell(col, _value(results, k, 'general_if'))}"
                       for k in ("base", "fixed_sft", "hsa_sft", "opd", "hat")
                       if _suite(results, k, "general_if"))
    return {"claim": "OPD recovers general instruction following lost in SFT",
            "measured": f"general_if (strict prompt pass rate) {scores}; "
                        f"{ROW_BY_KEY[model].label} vs {ROW_BY_KEY[against].label}: {note}",
            "holds": _HOLDS[p.verdict] if p is not None else CLOSE,
            "n": f"{_n(results, model, 'general_if')} prompts per model", "key": "2"}


def _segment_change(results: Results, segment: str) -> tuple[str, float, float] | None:
    """"+OPD m [lo, hi] -> HAT m [lo, hi], change d [lo, hi]" for one think segment, per model
    call, with bootstrap intervals; None when either model kept no per-call lengths."""
    before = (_suite(results, "opd", "lengths").get("details") or {}).get(segment)
    after = (_suite(results, "hat", "lengths").get("details") or {}).get(segment)
    if not before or not after:
        return None
    (m0, lo0, hi0), (m1, lo1, hi1) = mean_interval(before), mean_interval(after)
    d, lo, hi = mean_difference(before, after)
    return (f"{segment} {m0:.1f} [{lo0:.1f}, {hi0:.1f}] -> {m1:.1f} [{lo1:.1f}, {hi1:.1f}] tokens a call "
            f"({len(before)} -> {len(after)} calls), change {d:+.1f} [{lo:+.1f}, {hi:+.1f}]", lo, hi)


def _lengths_claim(results: Results) -> dict[str, str] | None:
    """Claim 3: HSA-RL shortens think_tool and think_reply (each with an interval) without
    losing live_qa success (paired). Holds when both segments' intervals lie below zero and
    success is not worse; fails when success is worse or a segment grows; else too close."""
    if not _suite(results, "opd", "lengths") or not _suite(results, "hat", "lengths"):
        return None
    if not _suite(results, "opd", "live_qa") or not _suite(results, "hat", "live_qa"):
        return None
    p, note = _pair(lambda: compare(_suite(results, "opd", "live_qa"), _suite(results, "hat", "live_qa")))
    segments = [_segment_change(results, s) for s in ("think_tool", "think_reply")]
    if any(s is None for s in segments):
        text = "think lengths without per-call records (not paired)"
        shorter = longer = False
    else:
        text = "; ".join(s[0] for s in segments if s is not None)
        shorter = all(s is not None and s[2] < 0 for s in segments)
        longer = any(s is not None and s[1] > 0 for s in segments)
    lost = p is not None and p.verdict == WORSE
    holds = "no" if lost or longer else ("yes" if p is not None and shorter else CLOSE)
    return {"claim": "RL shortens reasoning without losing accuracy",
            "measured": f"{text}; live_qa success HAT vs +OPD: {note}",
            "holds": holds, "n": f"{_n(results, 'hat', 'live_qa')} live_qa items", "key": "3"}


def detectable_notes(claims: list[dict[str, str]], cfg: PipelineConfig) -> None:
    """A claim too close to call says what this run could have detected (paired, alpha 0.05,
    power 0.8), so "too close" is read as a size statement, not as "no effect"."""
    smallest = {d.claim.split(".")[0]: d for d in detectable_effects(cfg)}
    for c in claims:
        d = smallest.get(c.get("key", ""))
        if c["holds"] == CLOSE and d is not None:
            c["measured"] += (f"; smallest effect these sizes detect ({d.comparison}, n={d.n}): "
                              f"{d.smallest}, published: {d.published}")


def evolution_finding(summary: dict[str, Any]) -> dict[str, str]:
    """Claim 4 from the evolve stage: both models' test error before and after, and the
    difference of the reductions with its paired interval (holds when the interval is above 0)."""
    d, reps = summary["difference"], summary["reports"]
    labels = {k: ROW_BY_KEY[k].label if k in ROW_BY_KEY else k for k in reps}
    errors = "; ".join(f"{labels[k]} {r['test_error_before']:.3f} -> {r['test_error_after']:.3f}"
                       for k, r in reps.items())
    holds = "yes" if d["lo"] > 0 else ("no" if d["hi"] < 0 else CLOSE)
    return {"claim": "Harness Evolution with the model frozen cuts HAT's error more than Fixed-SFT's",
            "measured": f"test error {errors}; reduction {labels[d['b']]} {d['reduction_b']:+.3f} vs "
                        f"{labels[d['a']]} {d['reduction_a']:+.3f}, difference {d['difference']:+.3f} "
                        f"[95% {d['lo']:+.3f}, {d['hi']:+.3f}] (defects: {', '.join(summary['defects'])})",
            "holds": holds, "n": f"{d['n']} test questions, the same for both models", "key": "4"}


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _stage_log(run: RunDir) -> list[dict[str, Any]]:
    log = []
    for stage in plan():
        record = run.done(stage)
        if record is not None:
            log.append({"stage": stage.label, "seconds": record.get("seconds", 0),
                        "finished": record.get("finished", "")})
    return log


def rl_signal_note(run: RunDir) -> str:
    """How many HSA-RL steps could change the model: a GRPO step whose every group scored its
    rollouts alike has zero advantages and no policy gradient, so HAT then equals +OPD by
    construction, not by measurement."""
    stage = next((s for s in plan() if s.row is not None and s.row.stage == "rl" and s.kind == "train"), None)
    record = run.done(stage) if stage is not None else None
    signal = (record or {}).get("outputs", {}).get("rl_signal")
    if not signal:
        return ""
    steps, none = signal.get("steps") or 0, signal["steps_without_signal"]
    return (f"{none} of {steps} RL steps had no learning signal (every group's rollouts scored "
            "alike)")


def precision_line(run: RunDir, cfg: PipelineConfig) -> str:
    """The weight precision each evaluated model decoded in, as the eval stages recorded it
    (`auto` resolves per machine), or what the config asked for."""
    seen: dict[str, list[str]] = {}
    for stage in plan():
        record = run.done(stage)
        if stage.kind == "eval" and stage.row is not None and record is not None:
            precision = record.get("outputs", {}).get("precision")
            if precision:
                seen.setdefault(precision, []).append(stage.row.label)
    if not seen and not cfg.eval_precision:
        return ""
    if not seen:  # a run from before the eval stages recorded it: what the config asked for
        where, asked = str(cfg.eval_precision), ""
    else:
        where = next(iter(seen)) if len(seen) == 1 else "; ".join(
            f"{p}: {', '.join(labels)}" for p, labels in seen.items())
        asked = f" (eval_precision {cfg.eval_precision})" if cfg.eval_precision else ""
    return f" Evaluations decode the models' weights in {where}{asked}."


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def write_report(run: RunDir, cfg: PipelineConfig) -> dict[str, Any]:
    """Write report.md, report.html and the plots; returns their paths and the table."""
    results = read_results(run.eval)
    plots_dir = run.root / "plots"
    plots_dir.mkdir(parents=True, exist_ok=True)
    plots = {"scores": scores_plot(results, plots_dir / "scores.png"),
             "variant drop": drop_plot(results, plots_dir / "variant_drop.png"),
             "think lengths before/after RL": lengths_plot(results, plots_dir / "lengths.png")}
    claims = findings(results)
    rl_note = rl_signal_note(run)
    for claim in claims:
        if rl_note and claim["claim"].startswith("RL shortens"):
            claim["measured"] += f"; {rl_note}"
    if (evolution := run.done(EVOLVE)) is not None:
        claims.append(evolution_finding(evolution["outputs"]))
    detectable_notes(claims, cfg)
    paired = paired_verdicts(results)
    log = _stage_log(run)
    data_lines = training_data_lines(run)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    md = [f"# HAT pipeline report: {run.root.name}", "",
          f"Profile `{cfg.profile}`, base model `{cfg.base_model}`, seed {cfg.seed}; written {created}."
          + precision_line(run, cfg),
          "", "## Ablation", "", markdown_table(results), "",
          SUCCESS_NOTE, "",
          "## Paired comparisons", "", PAIRED_NOTE, "",
          "| suite | comparison | verdict | measured |", "|---|---|---|---|"]
    md += [f"| {r['suite']} | {r['pair']} | **{r['verdict']}** | {r['measured']} |" for r in paired]
    md += ["", "## Judges", "", *judge_lines(run, cfg)]
    md += ["", "## The published system's claims, as measured here", ""]
    for c in claims:
        md.append(f"- **{c['claim']}**: {c['measured']} -> holds here: **{c['holds']}** ({c['n']}).")
    md += ["", "Small evaluation sets make these differences noisy; the profile's sizes are in "
           "`pipeline.json`. Nothing here is tuned to favour any claim.", ""]
    if data_lines:
        md += ["## Training data", "", *data_lines, ""]
    md += ["## Plots", ""]
    md += [f"![{name}](plots/{p.name})" for name, p in plots.items()]
    md += ["", "## Stages", "", "| stage | seconds | finished |", "|---|---:|---|"]
    md += [f"| {s['stage']} | {s['seconds']} | {s['finished']} |" for s in log]
    md += ["", "## Files", "", "- data manifest: `data/manifest.json`",
           "- checkpoints: `checkpoints/<model>/final` (each with `hatkit_checkpoint.json`)",
           "- suite results and traces: `eval/<model>/`", ""]
    _atomic_write(run.root / "report.md", "\n".join(md))
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.from_string(_TEMPLATE.read_text(encoding="utf-8")).render(
        title=f"HAT pipeline report: {run.root.name}", cfg=cfg, created=created,
        columns=COLUMNS, rows=[(r.label, [fmt_cell(c, x) for c, x in zip(COLUMNS, vals, strict=True)])
                               for r, vals in table_rows(results)],
        claims=claims, paired=paired, success_note=SUCCESS_NOTE, paired_note=PAIRED_NOTE,
        plots={name: _data_uri(p) for name, p in plots.items()}, log=log,
        training_data=[line.removeprefix("- ") for line in data_lines],
        details=_details(results))
    _atomic_write(run.root / "report.html", html)
    table = {ROW_BY_KEY[k].label: {s: r.get("metrics", {}) for s, r in v.items()} for k, v in results.items()}
    return {"report_md": str(run.root / "report.md"), "report_html": str(run.root / "report.html"),
            "table": table, "paired": paired}


def judge_lines(run: RunDir, cfg: PipelineConfig) -> list[str]:
    """Which judge scored every suite (as each evaluation stage recorded it; the code's own
    judge for stages that recorded none) and which one HSA-RL was rewarded by (from the HAT
    checkpoint when it exists), by content hash: the two must differ."""
    from ..domain import get_domain

    domain = get_domain(cfg.domain)
    current = domain.judge(role="eval")
    recorded = {}
    for stage in plan(cfg):
        record = run.done(stage) if stage.kind == "eval" else None
        judge = (record or {}).get("outputs", {}).get("eval_judge")
        if isinstance(judge, dict) and judge.get("hash"):
            recorded[str(judge["hash"])] = str(judge.get("name") or judge["hash"])
    eval_hashes = recorded or {current.judge_hash: current.name}
    reward_hash = domain.judge(domain.reward_judge_harness_dir, role="reward").judge_hash
    meta_path = run.checkpoints / "hat" / "final" / "hatkit_checkpoint.json"
    if meta_path.is_file():
        reward_hash = str(json.loads(meta_path.read_text(encoding="utf-8")).get("judge_hash") or reward_hash)
    lines = [f"- eval judge (every suite): `{name}`, hash `{h[:12]}`" for h, name in eval_hashes.items()]
    if len(eval_hashes) > 1:
        lines.append("- **the evaluation stages were scored by different eval judges**: compare models "
                     "across them with care")
    elif not recorded:
        lines[0] += " (the code's judge now: the evaluation stages recorded none)"
    same = reward_hash in eval_hashes
    lines.append(f"- reward judge (HSA-RL): hash `{reward_hash[:12]}`"
                 + (" **(the eval judge itself: the HAT row is scored by the rubric it was trained on)**"
                    if same else " (a separate harness, versioned apart from the eval judge)"))
    return lines


def _details(results: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every metric of every suite, per model, for the report's appendix."""
    out = []
    for key, suites in results.items():
        for suite, data in sorted(suites.items()):
            metrics = data.get("metrics", {})
            out.append({"model": ROW_BY_KEY[key].label, "suite": suite, "n": data.get("n", ""),
                        "metrics": json.dumps(metrics, sort_keys=True)})
    return out

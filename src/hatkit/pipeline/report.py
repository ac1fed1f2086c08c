"""`runs/<id>/report.md` and a self-contained `report.html`: the ablation table, the published
system's three claims checked against the numbers measured here, plots, and the stage log.

The claims are stated as measured, whichever way they fall; with the quick profile's small
evaluation sets the differences are often inside the noise, and the report says so.
"""

from __future__ import annotations

import base64
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jinja2

from .config import PipelineConfig
from .plots import drop_plot, lengths_plot, scores_plot
from .stages import ROW_BY_KEY, RunDir, plan
from .table import COLUMNS, cell, fmt_cell, markdown_table, read_results, table_rows

_TEMPLATE = Path(__file__).with_name("report.html.j2")


def _value(results: dict[str, dict[str, dict[str, Any]]], row: str, title: str) -> float | None:
    column = next(c for c in COLUMNS if c.title == title)
    return cell(results.get(row, {}), column)


def _n(results: dict[str, dict[str, dict[str, Any]]], row: str, suite: str) -> int:
    n = results.get(row, {}).get(suite, {}).get("n", 0)
    return int(n) if isinstance(n, int | float) else 0


CLOSE = "too close to call"
LENGTH_CHANGE = 0.05
"""A relative change in think lengths below this counts as no change."""


def _verdict(diff: float, resolution: float) -> str:
    """yes / no for a difference that should be positive, or too close to call when it is
    smaller than what one evaluation item can move (1/n)."""
    if abs(diff) < resolution - 1e-9:
        return CLOSE
    return "yes" if diff > 0 else "no"


def findings(results: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, str]]:
    """The published system's claims, each with the figures measured in this run and a
    verdict: yes, no, or too close to call when the difference is below one item's worth."""

    def v(row: str, title: str) -> float | None:
        return _value(results, row, title)

    out = []
    fixed, hsa = v("fixed_sft", "variant drop"), v("hsa_sft", "variant drop")
    if fixed is not None and hsa is not None:
        n = _n(results, "hsa_sft", "variant_qa")
        out.append({"claim": "HSA keeps the variant drop small where fixed-harness SFT loses more",
                    "measured": f"drop HSA-SFT {hsa:+.3f} vs Fixed-SFT {fixed:+.3f}",
                    "holds": _verdict(fixed - hsa, 1 / max(n, 1)),
                    "n": f"{n} variant items per model"})
    base, sft, opd = v("base", "general_if"), v("hsa_sft", "general_if"), v("opd", "general_if")
    if sft is not None and opd is not None:
        n = _n(results, "opd", "general_if")
        out.append({"claim": "OPD recovers general instruction following lost in SFT",
                    "measured": f"general_if Base {fmt_cell(COLUMNS[3], base)}, HSA-SFT {sft:.3f}, "
                                f"+OPD {opd:.3f}",
                    "holds": _verdict(opd - sft, 1 / max(n, 1)),
                    "n": f"{n} prompts per model"})
    tt0, tt1 = v("opd", "think_tool tokens"), v("hat", "think_tool tokens")
    tr0, tr1 = v("opd", "think_reply tokens"), v("hat", "think_reply tokens")
    acc0, acc1 = v("opd", "live_qa"), v("hat", "live_qa")
    if None not in (tt0, tt1, tr0, tr1, acc0, acc1):
        assert tt0 is not None and tt1 is not None and tr0 is not None and tr1 is not None
        assert acc0 is not None and acc1 is not None
        n = _n(results, "hat", "live_qa")
        before, after = tt0 + tr0, tt1 + tr1
        change = (before - after) / before if before > 0 else 0.0
        lost = acc0 - acc1 >= 1 / max(n, 1) - 1e-9
        holds = "no" if lost or change <= -LENGTH_CHANGE else (
            "yes" if change >= LENGTH_CHANGE and tt1 <= tt0 and tr1 <= tr0 else CLOSE)
        out.append({"claim": "RL shortens reasoning without losing accuracy",
                    "measured": f"think_tool {tt0:.1f} -> {tt1:.1f}, think_reply {tr0:.1f} -> "
                                f"{tr1:.1f} tokens; live_qa {acc0:.3f} -> {acc1:.3f}",
                    "holds": holds, "n": f"{n} live_qa items"})
    return out


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
    log = _stage_log(run)
    created = datetime.now(UTC).isoformat(timespec="seconds")
    md = [f"# HAT pipeline report: {run.root.name}", "",
          f"Profile `{cfg.profile}`, base model `{cfg.base_model}`, seed {cfg.seed}; written {created}.",
          "", "## Ablation", "", markdown_table(results), "",
          "Scores are in [0, 1]; the variant drop is live_qa - variant_qa (lower is better); "
          "think lengths are mean tokens per reasoning block (one per model call); latency is per "
          "agent-loop turn.", "",
          "## The published system's claims, as measured here", ""]
    for c in claims:
        md.append(f"- **{c['claim']}**: {c['measured']} -> holds here: **{c['holds']}** ({c['n']}).")
    md += ["", "Small evaluation sets make these differences noisy; the profile's sizes are in "
           "`pipeline.json`. Nothing here is tuned to favour any claim.", "", "## Plots", ""]
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
        claims=claims, plots={name: _data_uri(p) for name, p in plots.items()}, log=log,
        details=_details(results))
    _atomic_write(run.root / "report.html", html)
    return {"report_md": str(run.root / "report.md"), "report_html": str(run.root / "report.html"),
            "table": {ROW_BY_KEY[k].label: {s: r.get("metrics", {}) for s, r in v.items()}
                      for k, v in results.items()}}


def _details(results: dict[str, dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every metric of every suite, per model, for the report's appendix."""
    out = []
    for key, suites in results.items():
        for suite, data in sorted(suites.items()):
            metrics = data.get("metrics", {})
            out.append({"model": ROW_BY_KEY[key].label, "suite": suite, "n": data.get("n", ""),
                        "metrics": json.dumps(metrics, sort_keys=True)})
    return out

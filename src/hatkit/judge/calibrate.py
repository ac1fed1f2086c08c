"""Judge calibration rounds: judge a calibration set and a held-out set, compare with labels,
log the round, and report agreement by round.

The loop the published system ran six times: judge the calibration set, read the
disagreements, edit the judge harness, run the next round. The held-out set is judged in
every round too but only its figures are logged (never its disagreements), so edits are
made against the calibration set alone and over-fitting to it shows as a gap between the
two curves. Calibration items and test items are disjoint by construction, and that is
checked: a round refuses items whose trace or question appears on both sides.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .agreement import DimensionAgreement, disagreement_rows, judge_agreement, summaries
from .labels import LabelledItem
from .roles import check_disjoint
from .verdict import DIMENSIONS, Judge, Verdict


@dataclass
class CalibrationRound:
    round: int
    """1 for the first round in the log, then counting up."""
    judge_name: str
    judge_hash: str
    """Content hash of the judge harness this round judged with."""
    created: str
    """UTC time, ISO 8601."""
    calibration: dict[str, dict[str, Any]]
    """dimension -> {agreement, kappa, n, confusion, unjudged} on the calibration set."""
    heldout: dict[str, dict[str, Any]]
    """The same on the held-out set (figures only)."""
    notes: str = ""
    """What changed in the judge harness since the last round."""
    flags: list[str] = field(default_factory=list)
    """Warnings, e.g. the judge hash did not change since the previous round."""
    calibration_disagreements: list[dict[str, Any]] = field(default_factory=list)
    """Every calibration disagreement with the verdict's evidence (what the next edit reads)."""
    families: dict[str, dict[str, Any]] = field(default_factory=dict)
    """family -> dimension -> {agree, n, rate, lo, hi} on independently written labelled
    conversations (families the checks were not written against: leave-one-family-out)."""
    false_alarms: dict[str, Any] = field(default_factory=dict)
    """Clean independent conversations the judge failed ({agree, n, rate, lo, hi})."""

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CalibrationRound:
        return cls(**data)


def item_ids(items: Sequence[LabelledItem]) -> list[str]:
    """trace:<id> and question:<id> of every item (what disjointness is checked on)."""
    out = []
    for it in items:
        out.append(f"trace:{it.trace_id}")
        qids = {it.question.id, str(it.trace.meta.get("question_id") or "")} - {""}
        out += [f"question:{q}" for q in sorted(qids)]
    return out


def check_items_disjoint(calibration_items: Sequence[LabelledItem],
                         heldout_items: Sequence[LabelledItem]) -> None:
    """ValueError when a calibration item's trace or question is also a held-out/test item."""
    try:
        check_disjoint(item_ids(calibration_items), item_ids(heldout_items))
    except ValueError as exc:
        raise ValueError(f"calibration items and test items are disjoint by construction, and "
                         f"that is checked: {exc}") from None


def judge_items(judge: Judge, items: Sequence[LabelledItem]) -> list[Verdict]:
    return [judge.judge(it.trace, it.harness) for it in items]


def evaluate_items(judge: Judge, items: Sequence[LabelledItem],
                   dimensions: Sequence[str] = DIMENSIONS) -> dict[str, DimensionAgreement]:
    """The judge's agreement with the items' labels, per dimension, at the judge's own pass
    thresholds (its `thresholds` attribute, when it has one)."""
    verdicts = judge_items(judge, items)
    thresholds: Mapping[str, float] | None = getattr(judge, "thresholds", None)
    return judge_agreement(verdicts, [x for it in items for x in it.labels], dimensions=dimensions,
                           thresholds=thresholds)


def read_rounds(log_path: Path | str) -> list[CalibrationRound]:
    """Every round in a JSONL log; a bad line raises ValueError naming file:line."""
    path = Path(log_path)
    if not path.exists():
        return []
    out = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(CalibrationRound.from_dict(json.loads(line)))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{path}:{lineno}: not a calibration round ({exc})") from None
    return out


def run_round(judge: Judge, calibration_items: Sequence[LabelledItem],
              heldout_items: Sequence[LabelledItem], log_path: Path | str, notes: str = "",
              dimensions: Sequence[str] = DIMENSIONS,
              families: Mapping[str, Mapping[str, Any]] | None = None,
              false_alarms: Mapping[str, Any] | None = None) -> CalibrationRound:
    """Judge both sets, append the round to the JSONL log at `log_path` and return it.

    Refuses (ValueError) calibration items that share a trace or question with the
    held-out items, and an empty set on either side.
    """
    if not calibration_items or not heldout_items:
        raise ValueError("a calibration round needs calibration items and held-out items")
    check_items_disjoint(calibration_items, heldout_items)
    path = Path(log_path)
    previous = read_rounds(path)
    cal = evaluate_items(judge, calibration_items, dimensions)
    held = evaluate_items(judge, heldout_items, dimensions)
    flags = []
    if previous and previous[-1].judge_hash == judge.judge_hash:
        flags.append(f"judge harness unchanged since round {previous[-1].round} "
                     f"(same hash {judge.judge_hash[:12]})")
    for name, result in (("calibration", cal), ("held-out", held)):
        flags += [f"{name} {d}: {r.unjudged} item(s) the judge could not judge"
                  for d, r in result.items() if r.unjudged]
    rnd = CalibrationRound(
        round=previous[-1].round + 1 if previous else 1, judge_name=judge.name,
        judge_hash=judge.judge_hash, created=datetime.now(UTC).isoformat(timespec="seconds"),
        calibration=summaries(cal), heldout=summaries(held), notes=notes, flags=flags,
        calibration_disagreements=disagreement_rows(cal),
        families={f: dict(d) for f, d in (families or {}).items()}, false_alarms=dict(false_alarms or {}))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        fh.write(rnd.to_json() + "\n")
    return rnd


# ---- report ------------------------------------------------------------------------------------
def _pct(x: Any) -> str:
    return "  n/a" if x is None else f"{100 * float(x):5.1f}"


def _kappa(x: Any) -> str:
    return "  n/a" if x is None else f"{float(x):5.2f}"


def report_table(rounds: Sequence[CalibrationRound], dimensions: Sequence[str] = DIMENSIONS) -> str:
    """One row per round: agreement % (kappa, n) per dimension, calibration and held-out."""
    head = ["round", "judge hash  "]
    for d in dimensions:
        head += [f"{d[:3]} cal % (k, n)", f"{d[:3]} held % (k, n)"]
    head.append("notes / flags")
    rows = [head]
    for r in rounds:
        row = [str(r.round), r.judge_hash[:12]]
        for d in dimensions:
            for side in (r.calibration, r.heldout):
                s = side.get(d, {})
                row.append(f"{_pct(s.get('agreement'))} ({_kappa(s.get('kappa'))}, {s.get('n', 0)})")
        row.append("; ".join(x for x in (r.notes, *r.flags) if x))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:-1], widths, strict=True)) + "  " + row[-1]
             for row in rows]
    lines.insert(1, "-" * len(lines[0]))
    latest = rounds[-1] if rounds else None
    if latest is not None and latest.families:
        lines += ["", f"round {latest.round}: independent families (written without the judge's checks), "
                      "agreement % [95% interval] (n)"]
        for family, dims in sorted(latest.families.items(), key=lambda kv: (kv[0].startswith("all"), kv[0])):
            cells = [f"{d[:3]} {_pct(dims[d].get('rate'))} [{_pct(dims[d].get('lo')).strip()}, "
                     f"{_pct(dims[d].get('hi')).strip()}] ({dims[d].get('n', 0)})"
                     for d in dimensions if d in dims]
            lines.append(f"  {family:28} " + "   ".join(cells))
        fa = latest.false_alarms
        if fa:
            which = "sealed clean" if any(f.startswith("all sealed") for f in latest.families) else "clean"
            lines.append(f"  false alarms on {which}: {fa['n'] - fa['agree']}/{fa['n']}")
    return "\n".join(line.rstrip() for line in lines)


def plot_rounds(rounds: Sequence[CalibrationRound], png_path: Path | str,
                dimensions: Sequence[str] = DIMENSIONS) -> Path:
    """Agreement by round, one panel per dimension, calibration vs held-out."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(dimensions), figsize=(5.5 * len(dimensions), 4.2), squeeze=False)
    xs = [r.round for r in rounds]
    for ax, dim in zip(axes[0], dimensions, strict=True):
        for side, style, label in (("calibration", "o-", "calibration"), ("heldout", "s--", "held-out")):
            ys = [100 * v if (v := getattr(r, side).get(dim, {}).get("agreement")) is not None
                  else float("nan") for r in rounds]
            ax.plot(xs, ys, style, label=label)
            for x, y in zip(xs, ys, strict=True):
                if y == y:
                    ax.annotate(f"{y:.1f}", (x, y), textcoords="offset points", xytext=(0, 6),
                                ha="center", fontsize=8)
        ax.set_title(f"{dim}: agreement with labels")
        ax.set_xlabel("calibration round")
        ax.set_ylabel("agreement (%)")
        ax.set_xticks(xs)
        ax.set_ylim(0, 110)
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    fig.tight_layout()
    out = Path(png_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def report(log_path: Path | str, png_path: Path | str, dimensions: Sequence[str] = DIMENSIONS) -> str:
    """The rounds of a log as a text table; also writes the agreement-by-round plot."""
    rounds = read_rounds(log_path)
    if not rounds:
        raise ValueError(f"{log_path}: no calibration rounds logged yet")
    plot_rounds(rounds, png_path, dimensions)
    return report_table(rounds, dimensions)

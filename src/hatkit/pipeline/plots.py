"""The report's figures: success (with 95% intervals) and pass rates by model, the variant
drop in success, think lengths before/after RL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .stages import ROWS
from .table import COLUMNS, cell, value


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def scores_plot(results: dict[str, dict[str, dict[str, Any]]], path: Path) -> Path:
    plt = _pyplot()
    rows = [r for r in ROWS if r.key in results]
    columns = [c for c in COLUMNS if c.title in ("live_qa success", "variant_qa success", "general_if",
                                                  "faults success")]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    width = 0.8 / max(len(columns), 1)
    for i, col in enumerate(columns):
        # a suite that did not run for a model draws nothing there (not a zero bar)
        cells = [(j, c) for j, r in enumerate(rows) if (c := cell(results[r.key], col)) is not None]
        values = [c.value for _, c in cells]
        err = [[max(0.0, c.value - c.lo) if c.lo is not None else 0.0 for _, c in cells],
               [max(0.0, c.hi - c.value) if c.hi is not None else 0.0 for _, c in cells]]
        xs = [j + i * width for j, _ in cells]
        ax.bar(xs, values, width, label=col.title, yerr=err if col.interval else None, capsize=2)
    ax.set_xticks([j + width * (len(columns) - 1) / 2 for j in range(len(rows))],
                  [r.label for r in rows])
    ax.set_ylim(0, 1)
    ax.set_ylabel("rate (higher is better)")
    ax.set_title("Success (95% interval) and pass rates by model")
    ax.legend(fontsize=8, ncols=len(columns), loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def drop_plot(results: dict[str, dict[str, dict[str, Any]]], path: Path) -> Path:
    plt = _pyplot()
    drop = next(c for c in COLUMNS if c.metric == "drop")
    rows = [r for r in ROWS if r.key in results and value(results[r.key], drop) is not None]
    values = [value(results[r.key], drop) or 0.0 for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar([r.label for r in rows], values, color=["#c44" if v > 0 else "#4a4" for v in values])
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_ylabel("live_qa - variant_qa success")
    ax.set_title("Drop on held-out harness variants (lower is better)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _lengths(results: dict[str, dict[str, dict[str, Any]]], row: str, segment: str) -> list[float]:
    details = results.get(row, {}).get("lengths", {}).get("details", {})
    values = details.get(segment) if isinstance(details, dict) else None
    return [float(v) for v in values] if isinstance(values, list) else []


def lengths_plot(results: dict[str, dict[str, dict[str, Any]]], path: Path,
                 before: str = "opd", after: str = "hat") -> Path:
    """Think-token distributions before (+OPD) and after RL (HAT), one panel per segment."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    labels = {r.key: r.label for r in ROWS}
    for ax, segment in zip(axes, ("think_tool", "think_reply"), strict=True):
        for row, style in ((before, {"histtype": "step", "linewidth": 2, "color": "#555"}),
                           (after, {"histtype": "stepfilled", "alpha": 0.45, "color": "#27a"})):
            values = _lengths(results, row, segment)
            if values:
                ax.hist(values, bins=12, label=f"{labels[row]} (n={len(values)})", **style)
        ax.set_title(f"{segment} tokens per reasoning block")
        ax.set_xlabel("tokens")
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
        else:
            ax.text(0.5, 0.5, "none recorded", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

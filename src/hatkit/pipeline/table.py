"""The ablation table, read straight from the suites' own result files.

Nothing here recomputes a score: every cell is a metric a suite wrote to
`eval/<row>/<suite>.json` (the variant drop is the one derived column, live_qa - variant_qa
success), so the report cannot disagree with the suites. Success cells carry the suite's 95%
interval: "0.62 [0.47, 0.75]".
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .stages import ROWS, ModelRow


@dataclass(frozen=True)
class Column:
    title: str
    suite: str
    metric: str
    higher_is_better: bool | None
    fmt: str = "{:.3f}"
    interval: bool = False
    """The suite also wrote `<metric>_lo` and `<metric>_hi` (a 95% interval) to show beside it."""


@dataclass(frozen=True)
class Cell:
    """A cell's value as the suite wrote it, with its interval when the column has one."""

    value: float
    lo: float | None = None
    hi: float | None = None


COLUMNS = (
    Column("live_qa success", "live_qa", "success", True, "{:.2f}", True),
    Column("variant_qa success", "variant_qa", "success", True, "{:.2f}", True),
    Column("variant drop", "", "drop", False),
    Column("affected success", "variant_qa", "success_affected", True, "{:.2f}", True),
    Column("stale rules", "variant_qa", "stale_rule_rate", False, "{:.2f}"),
    Column("stale tools", "variant_qa", "stale_tool_rate", False, "{:.2f}"),
    Column("general_if", "general_if", "prompt_strict", True),
    Column("faults success", "faults", "success", True, "{:.2f}", True),
    Column("faults recovered", "faults", "recovered_rate", True),
    Column("safety violations", "safety", "violation_rate", False),
    Column("think_tool tokens", "lengths", "think_tool_mean", None, "{:.1f}", True),
    Column("think_reply tokens", "lengths", "think_reply_mean", None, "{:.1f}", True),
    Column("turn p50 s", "latency", "turn_p50_s", False, "{:.2f}"),
    Column("turn p95 s", "latency", "turn_p95_s", False, "{:.2f}"),
)


def read_results(eval_dir: Path) -> dict[str, dict[str, dict[str, Any]]]:
    """{row key: {suite: the suite's JSON}} for every result file present."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for row in ROWS:
        folder = eval_dir / row.key
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.json")):
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and "metrics" in data:
                out.setdefault(row.key, {})[path.stem] = data
    return out


def _metric(results: dict[str, dict[str, Any]], suite: str, name: str) -> float | None:
    value = results.get(suite, {}).get("metrics", {}).get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def cell(results: dict[str, dict[str, Any]], column: Column) -> Cell | None:
    """One cell, or None when the suite did not run for that model (or wrote no such metric)."""
    if column.metric == "drop":
        live, variant = value(results, COLUMNS[0]), value(results, COLUMNS[1])
        return None if live is None or variant is None else Cell(live - variant)
    v = _metric(results, column.suite, column.metric)
    if v is None:
        return None
    if not column.interval:
        return Cell(v)
    return Cell(v, _metric(results, column.suite, f"{column.metric}_lo"),
                _metric(results, column.suite, f"{column.metric}_hi"))


def value(results: dict[str, dict[str, Any]], column: Column) -> float | None:
    """A cell's point value (for plots and claims)."""
    c = cell(results, column)
    return None if c is None else c.value


def by_title(title: str) -> Column:
    return next(c for c in COLUMNS if c.title == title)


def table_rows(results: dict[str, dict[str, dict[str, Any]]]) -> list[tuple[ModelRow, list[Cell | None]]]:
    return [(row, [cell(results.get(row.key, {}), c) for c in COLUMNS]) for row in ROWS
            if row.key in results]


def fmt_cell(column: Column, c: Cell | float | None) -> str:
    """The value as the column formats it, with " [lo, hi]" when it has an interval."""
    if c is None:
        return "n/a"
    if not isinstance(c, Cell):
        return column.fmt.format(c)
    text = column.fmt.format(c.value)
    if c.lo is not None and c.hi is not None:
        text += f" [{column.fmt.format(c.lo)}, {column.fmt.format(c.hi)}]"
    return text


def markdown_table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = ["| model | " + " | ".join(c.title for c in COLUMNS) + " |",
             "|---|" + "---:|" * len(COLUMNS)]
    for row, values in table_rows(results):
        lines.append(f"| {row.label} | " + " | ".join(fmt_cell(c, v) for c, v in zip(COLUMNS, values,
                                                                                    strict=True)) + " |")
    return "\n".join(lines)

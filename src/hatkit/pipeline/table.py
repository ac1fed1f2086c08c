"""The ablation table, read straight from the suites' own result files.

Nothing here recomputes a score: every cell is a metric a suite wrote to
`eval/<row>/<suite>.json` (the variant drop is the one derived column, live_qa - variant_qa),
so the report cannot disagree with the suites.
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


COLUMNS = (
    Column("live_qa", "live_qa", "score", True),
    Column("variant_qa", "variant_qa", "score", True),
    Column("variant drop", "", "drop", False),
    Column("general_if", "general_if", "prompt_strict", True),
    Column("faults recovered", "faults", "recovered_rate", True),
    Column("safety violations", "safety", "violation_rate", False),
    Column("think_tool tokens", "lengths", "think_tool_mean", None, "{:.1f}"),
    Column("think_reply tokens", "lengths", "think_reply_mean", None, "{:.1f}"),
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


def cell(results: dict[str, dict[str, Any]], column: Column) -> float | None:
    """One cell's value, or None when the suite did not run for that model."""
    if column.metric == "drop":
        live = cell(results, COLUMNS[0])
        variant = cell(results, COLUMNS[1])
        return None if live is None or variant is None else live - variant
    value = results.get(column.suite, {}).get("metrics", {}).get(column.metric)
    return float(value) if isinstance(value, int | float) else None


def table_rows(results: dict[str, dict[str, dict[str, Any]]]) -> list[tuple[ModelRow, list[float | None]]]:
    return [(row, [cell(results.get(row.key, {}), c) for c in COLUMNS]) for row in ROWS
            if row.key in results]


def fmt_cell(column: Column, value: float | None) -> str:
    return "n/a" if value is None else column.fmt.format(value)


def markdown_table(results: dict[str, dict[str, dict[str, Any]]]) -> str:
    lines = ["| model | " + " | ".join(c.title for c in COLUMNS) + " |",
             "|---|" + "---:|" * len(COLUMNS)]
    for row, values in table_rows(results):
        lines.append(f"| {row.label} | " + " | ".join(fmt_cell(c, v) for c, v in zip(COLUMNS, values,
                                                                                    strict=True)) + " |")
    return "\n".join(lines)

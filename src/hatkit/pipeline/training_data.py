"""The report's "Training data" lines: how long the rows are and what the length limits cut.

Read from the data manifest and the training stages' records (`outputs.length_plan`), so the
report states the figures the run actually trained with; nothing is recomputed here.
"""

from __future__ import annotations

import json
from typing import Any

from .stages import RunDir, plan


def training_data_lines(run: RunDir) -> list[str]:
    """Markdown bullet lines (empty when the data stage has not run)."""
    path = run.data / "manifest.json"
    if not path.is_file():
        return []
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    lines = []
    if "system_prompt_tokens" in manifest:
        lines.append(f"- Rendered system prompt of the base harness: "
                     f"{manifest['system_prompt_tokens']} tokens.")
    for mode, splits in sorted(manifest.get("modes", {}).items()):
        train = splits.get("train", {})
        rows = int(train.get("rows", 0))
        if not rows:
            continue
        lines.append(f"- {mode} train: {rows} rows, mean {train.get('tokens', 0) / rows:.0f} tokens "
                     f"(longest {train.get('max_tokens', 'n/a')}), mean "
                     f"{train.get('trained_tokens', 0) / rows:.0f} trained tokens a row.")
    for stage in plan():
        if stage.kind != "train":
            continue
        record = run.done(stage)
        lp = (record or {}).get("outputs", {}).get("length_plan")
        if not isinstance(lp, dict):
            continue
        if lp.get("stage") == "sft":
            lines.append(f"- {stage.label}: max_length {lp.get('max_length')}; rows cut "
                         f"{lp.get('rows_cut', 0)}, trained tokens cut {lp.get('trained_tokens_cut', 0)}, "
                         f"rows dropped {lp.get('rows_dropped', 0)}.")
        else:
            lines.append(f"- {stage.label}: completion limit {lp.get('completion_limit')}; "
                         f"prompts over the context: {lp.get('over_context', 0)}.")
    return lines

"""Length plans: what a stage's length limits would cut, counted before training starts.

DESIGN.md: "Training rows are never cut silently". TRL's SFTTrainer truncates every row to
`max_length` and drops the rows left without a trained token, without a word; a plan counts,
per question category and in total, what a limit would do, so that SFT can print it and refuse
one that cuts a trained token or drops a row (`TruncationRefused`) unless told otherwise.

OPD and RL generate their completions, so only their prompts are known before training. TRL
1.16 has no prompt limit for either (prompts are never truncated); what can go wrong is a prompt
plus the completion limit overrunning the model's context. `PromptPlan` reports that, the
completion limit, and for RL the most tokens the policy may generate in an episode: beyond
`max_completion_length` the rollout cuts them, and logs the count as `hat/trained_tokens_cut`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from rich.table import Table

NO_CATEGORY = "(none)"


class TruncationRefused(ValueError):
    """A length limit would cut trained tokens or drop rows, and no override allows it."""


def trained_span(mask: Sequence[int]) -> tuple[int, int]:
    """(first_trained, last_trained): the index of the first token with loss 1 (the row's
    length when none) and the index + 1 of the last one (0 when none)."""
    n = len(mask)
    first = next((i for i, m in enumerate(mask) if m), n)
    last = next((n - i for i, m in enumerate(reversed(mask)) if m), 0)
    return first, last


@dataclass
class Counts:
    """Rows of one category (or all) and what a limit does to them."""

    rows: int = 0
    trained_tokens: int = 0
    max_tokens: int = 0
    max_last_trained: int = 0
    rows_cut: int = 0
    """Rows with any token beyond the limit."""
    rows_trained_cut: int = 0
    """Rows with a trained token beyond the limit."""
    trained_tokens_cut: int = 0
    rows_dropped: int = 0
    """Rows left without a trained token (TRL drops them from the data set)."""

    def add(self, other: Counts) -> None:
        for name, value in asdict(other).items():
            mine = getattr(self, name)
            setattr(self, name, max(mine, value) if name.startswith("max_") else mine + value)


@dataclass
class LengthPlan:
    """What SFT's `max_length` does to the rows of one data split."""

    label: str
    max_length: int | None
    total: Counts = field(default_factory=Counts)
    categories: dict[str, Counts] = field(default_factory=dict)

    @property
    def cuts_training(self) -> bool:
        return self.total.trained_tokens_cut > 0 or self.total.rows_dropped > 0

    def summary(self) -> str:
        t = self.total
        return (f"SFT {self.label}: max_length {self.max_length}, {t.rows} rows (longest "
                f"{t.max_tokens} tokens); rows cut: {t.rows_cut}, trained tokens cut: "
                f"{t.trained_tokens_cut}, rows dropped: {t.rows_dropped}")

    def table(self) -> Table:
        table = Table("category", "rows", "longest", "last trained", "rows cut",
                      "trained tokens cut", "rows dropped",
                      title=f"SFT length plan {self.label}, max_length {self.max_length}")
        for name, c in [*sorted(self.categories.items()), ("[b]total[/]", self.total)]:
            style = "red" if c.trained_tokens_cut or c.rows_dropped else None
            table.add_row(name, str(c.rows), str(c.max_tokens), str(c.max_last_trained),
                          str(c.rows_cut), str(c.trained_tokens_cut), str(c.rows_dropped), style=style)
        return table

    def record(self) -> dict[str, Any]:
        """JSON-ready numbers for stage records and checkpoint metadata."""
        return {"stage": "sft", "label": self.label, "max_length": self.max_length,
                **asdict(self.total),
                "categories": {k: asdict(v) for k, v in sorted(self.categories.items())}}

    def refuse_cuts(self, override: str = "allow_truncation") -> None:
        """Raise TruncationRefused naming, per category, what the limit would cut."""
        if not self.cuts_training:
            return
        parts = [f"{name}: {c.rows_trained_cut} rows lose {c.trained_tokens_cut} trained tokens, "
                 f"{c.rows_dropped} dropped"
                 for name, c in sorted(self.categories.items())
                 if c.trained_tokens_cut or c.rows_dropped]
        t = self.total
        raise TruncationRefused(
            f"SFT {self.label}: max_length {self.max_length} would cut {t.trained_tokens_cut} "
            f"trained tokens in {t.rows_trained_cut} of {t.rows} rows and drop {t.rows_dropped} "
            f"rows; by category: {'; '.join(parts)}. The longest row has {t.max_tokens} tokens: "
            f"set max_length to at least that (e.g. {-(-t.max_tokens // 64) * 64}; null = no "
            f"limit), or set {override}=true to train on the cut rows anyway")


def row_counts(mask: Sequence[int], limit: int | None, keep_end: bool = False) -> Counts:
    """One row's Counts under `limit`, as TRL truncates (keep_start unless `keep_end`)."""
    n, trained = len(mask), sum(mask)
    _, last = trained_span(mask)
    kept = trained
    if limit is not None and n > limit:
        kept = sum(mask[n - limit:] if keep_end else mask[:limit])
    return Counts(rows=1, trained_tokens=trained, max_tokens=n, max_last_trained=last,
                  rows_cut=int(limit is not None and n > limit),
                  rows_trained_cut=int(kept < trained), trained_tokens_cut=trained - kept,
                  rows_dropped=int(limit is not None and kept == 0))


def plan_sft(rows: Iterable[Mapping[str, Any]], max_length: int | None, label: str = "",
             keep_end: bool = False) -> LengthPlan:
    """Count what `max_length` cuts in rows holding a `loss_mask` (and a `category`)."""
    plan = LengthPlan(label, max_length)
    for row in rows:
        counts = row_counts(row["loss_mask"], max_length, keep_end)
        plan.categories.setdefault(str(row.get("category") or NO_CATEGORY), Counts()).add(counts)
        plan.total.add(counts)
    return plan


@dataclass
class PromptCounts:
    rows: int = 0
    max_prompt_tokens: int = 0
    over_context: int = 0
    """Prompts that with the completion limit would overrun the model's context."""
    may_cut: int = 0
    """RL: episodes whose generated tokens alone may exceed the completion limit."""


@dataclass
class PromptPlan:
    """OPD's or RL's prompts against the model's context and the completion limit."""

    stage: str
    completion_limit: int | None
    context: int | None
    generated_limit: int | None = None
    """RL: the most tokens the policy may generate in an episode (turns x calls x new tokens)."""
    groups: dict[str, PromptCounts] = field(default_factory=dict)
    total: PromptCounts = field(default_factory=PromptCounts)

    def add(self, group: str, prompt_tokens: int, generated: int | None = None) -> None:
        over = (self.context is not None
                and prompt_tokens + (self.completion_limit or 0) > self.context)
        may_cut = (generated is not None and self.completion_limit is not None
                   and generated > self.completion_limit)
        if generated is not None:
            self.generated_limit = max(self.generated_limit or 0, generated)
        for c in (self.groups.setdefault(group or NO_CATEGORY, PromptCounts()), self.total):
            c.rows += 1
            c.max_prompt_tokens = max(c.max_prompt_tokens, prompt_tokens)
            c.over_context += int(over)
            c.may_cut += int(may_cut)

    def summary(self) -> str:
        t = self.total
        text = (f"{self.stage.upper()}: {t.rows} prompts (longest {t.max_prompt_tokens} tokens), "
                f"completion limit {self.completion_limit}, model context {self.context}; "
                f"over the context: {t.over_context}")
        if self.generated_limit is not None:
            text += (f"; up to {self.generated_limit} generated tokens an episode, "
                     f"{t.may_cut} episodes may be cut (counted in hat/trained_tokens_cut)")
        return text

    def table(self) -> Table:
        table = Table("group", "prompts", "longest prompt", "over context", "may be cut",
                      title=f"{self.stage.upper()} length plan: completion limit "
                      f"{self.completion_limit}, context {self.context}")
        for name, c in [*sorted(self.groups.items()), ("[b]total[/]", self.total)]:
            table.add_row(name, str(c.rows), str(c.max_prompt_tokens), str(c.over_context),
                          str(c.may_cut), style="red" if c.over_context else None)
        return table

    def record(self) -> dict[str, Any]:
        return {"stage": self.stage, "completion_limit": self.completion_limit,
                "context": self.context, "generated_limit": self.generated_limit,
                **asdict(self.total),
                "groups": {k: asdict(v) for k, v in sorted(self.groups.items())}}


Plan = LengthPlan | PromptPlan

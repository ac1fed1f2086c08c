"""Speculative decoding helpers: prompt-lookup drafting and acceptance read from server metrics.

Prompt lookup (a.k.a. n-gram speculation): a live-commerce reply echoes the prompt a lot
(product names, prices, sizes copied from tool outputs), so the tokens after the latest
occurrence of the current tail n-gram are a cheap, model-free draft. The decoder verifies the
draft in one forward pass and keeps the longest prefix matching its own greedy choice, so the
output is the greedy output, only fewer forward passes are made. Decoding is in `decoding.py`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SpecStats", "branch_allowed", "prompt_lookup_draft", "spec_acceptance_from_metrics"]


@dataclass
class SpecStats:
    """Counters of one or more speculative decodes."""

    drafted: int = 0
    """Draft tokens proposed and verified."""
    accepted: int = 0
    """Draft tokens that matched the model's greedy choice."""
    steps: int = 0
    """Verification forward passes (each also yields one token of the model's own)."""
    tokens: int = 0
    """Tokens emitted."""
    extra: dict[str, float] = field(default_factory=dict)
    branch_drafted: int = 0
    """Tokens of the second (prompt-lookup) branch verified beside MTP heads' drafts."""
    branch_accepted: int = 0
    """Tokens taken from that branch (passes where it beat the heads' draft)."""

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.drafted if self.drafted else 0.0

    def add(self, other: SpecStats) -> None:
        self.drafted += other.drafted
        self.accepted += other.accepted
        self.steps += other.steps
        self.tokens += other.tokens
        self.branch_drafted += other.branch_drafted
        self.branch_accepted += other.branch_accepted

    def verify(self, draft: Sequence[int], greedy: Sequence[int], cache: Any, *, k: int,
               num_draft: int, adaptive: bool) -> tuple[int, int]:
        """One verification step, shared by prompt-lookup and draft-model decoding: count the
        draft tokens the target's greedy choices confirm, crop the rejected ones from the
        target's KV cache, and adapt the draft length. Returns (accepted, next k)."""
        accepted = _confirmed(draft, greedy, range(len(draft)))
        self.steps += 1
        self.drafted += len(draft)
        self.accepted += accepted
        rejected = len(draft) - accepted
        if adaptive and draft:
            k = min(num_draft, k + 2) if rejected == 0 else max(1, k - 1)
        if rejected:
            for layer in cache.layers:
                layer.crop(-rejected)
        return accepted, k

    def verify_branches(self, draft: Sequence[int], branch: Sequence[int], greedy: Sequence[int],
                        cache: Any, cur: int) -> tuple[list[int], int]:
        """One verify pass that checked two drafts side by side: the pending token, `draft`, then
        `branch`, each draft seeing only the pending token and its own earlier tokens
        (`branch_allowed`). `greedy[r]` is the target's choice after feed row r. Keeps the draft
        with more confirmed tokens (the heads' on a tie), moves the winning branch's keys and
        values to the slots right after the pending token (cache slot `cur`), and crops the rest.
        Returns (the confirmed tokens, the feed row whose choice comes next)."""
        rows_a = list(range(len(draft) + 1))
        rows_b = [0, *range(1 + len(draft), 1 + len(draft) + len(branch))]
        a = _confirmed(draft, greedy, rows_a)
        b = _confirmed(branch, greedy, rows_b)
        self.steps += 1
        self.drafted += len(draft)
        self.accepted += a
        self.branch_drafted += len(branch)
        fed = 1 + len(draft) + len(branch)
        if b > a:
            self.branch_accepted += b
            src = cur + 1 + len(draft)
            for layer in cache.layers:
                for t in (layer.keys, layer.values):
                    t[:, :, cur + 1:cur + 1 + b] = t[:, :, src:src + b].clone()
            keep, tokens, last = 1 + b, list(branch[:b]), rows_b[b]
        else:
            keep, tokens, last = 1 + a, list(draft[:a]), rows_a[a]
        for layer in cache.layers:
            layer.crop(-(fed - keep))
        return tokens, last


def _confirmed(draft: Sequence[int], greedy: Sequence[int], rows: Sequence[int]) -> int:
    """How many leading tokens of `draft` the target chose: draft[i] against the choice after
    feed row rows[i] (the row of the token before it)."""
    n = 0
    while n < len(draft) and draft[n] == greedy[rows[n]]:
        n += 1
    return n


def branch_allowed(cur: int, draft: int, branch: int, device: Any = None) -> Any:
    """Which cache slots each row of a two-branch verify pass may attend to: rows are the pending
    token (slot cur), `draft` tokens, then `branch` tokens; every row sees slots < cur, the
    pending token and the earlier tokens of its own branch (a [rows, cur + rows] bool tensor)."""
    import torch

    n = 1 + draft + branch
    allowed = torch.ones((n, cur + n), dtype=torch.bool, device=device).tril(cur)
    allowed[1 + draft:, cur + 1:cur + 1 + draft] = False
    return allowed


def prompt_lookup_draft(seq: Sequence[int], *, max_ngram: int = 3, min_ngram: int = 1,
                        num_draft: int = 8) -> list[int]:
    """Draft up to `num_draft` tokens by copying what followed the tail n-gram earlier in `seq`.

    Tries n from `max_ngram` down to `min_ngram`; for each n, the most recent earlier occurrence
    of the last n tokens that has at least one token after it wins. Returns [] if nothing matches.
    """
    length = len(seq)
    if num_draft <= 0:
        return []
    for n in range(min(max_ngram, length - 1), min_ngram - 1, -1):
        if n <= 0:
            break
        tail = list(seq[length - n:])
        first = tail[0]
        # candidate starts i with seq[i:i+n] == tail and i + n < length (something follows)
        for i in range(length - n - 1, -1, -1):
            if seq[i] == first and list(seq[i:i + n]) == tail:
                return list(seq[i + n:i + n + num_draft])
    return []


# metric names: vLLM (v0 and v1 engines) and SGLang
_ACCEPTED = ("vllm:spec_decode_num_accepted_tokens_total", "vllm:spec_decode_num_accepted_tokens",
             "sglang:spec_accept_tokens_total", "sglang:spec_num_accepted_tokens_total")
_DRAFTED = ("vllm:spec_decode_num_draft_tokens_total", "vllm:spec_decode_num_draft_tokens",
            "sglang:spec_draft_tokens_total", "sglang:spec_num_draft_tokens_total")
_RATE = ("vllm:spec_decode_draft_acceptance_rate", "sglang:spec_accept_rate")
_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def _sum_metrics(text: str) -> dict[str, float]:
    sums: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line.strip())
        if not m:
            continue
        try:
            value = float(m.group(3))
        except ValueError:
            continue
        sums[m.group(1)] = sums.get(m.group(1), 0.0) + value  # summed over label sets
    return sums


def spec_acceptance_from_metrics(text: str) -> dict[str, float] | None:
    """Speculative-decoding acceptance from a Prometheus metrics text (vLLM or SGLang).

    Returns {"accepted", "drafted", "acceptance_rate"} from the counters (summed over labels),
    or {"acceptance_rate"} from a rate gauge when only that is exported; None when the server
    reports no speculative decoding.
    """
    sums = _sum_metrics(text)
    accepted = next((sums[k] for k in _ACCEPTED if k in sums), None)
    drafted = next((sums[k] for k in _DRAFTED if k in sums), None)
    if accepted is not None and drafted is not None:
        rate = accepted / drafted if drafted else 0.0
        return {"accepted": accepted, "drafted": drafted, "acceptance_rate": rate}
    rates = [k for k in _RATE if k in sums]
    if rates:
        return {"acceptance_rate": sums[rates[0]]}
    return None

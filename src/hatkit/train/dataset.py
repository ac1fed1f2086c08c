"""SFT datasets from oracle episodes: chat-with-tools rows plus the per-token view.

Built twice over the same questions: on the fixed default harness (the baseline every
published comparison uses) and across the training family of harness variants (HSA). Token
ids, loss masks and segment ids come from the traces as generated, never from re-rendering
the chat. A manifest records hashes, seeds, counts, and proves the splits are disjoint.

Rows are never dropped or cut here to meet a length limit: each records `n_tokens`,
`first_trained` and `last_trained`, and the manifest the longest per split and category, so
that training can size its limit from the data or say what a given limit would cut
(hatkit.train.length_plan).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ..agent import Trace, read_traces
from ..agent.trace import GENERATED
from ..domain import Domain, domain_of, get_domain
from ..harness import Harness, load_harness
from ..models.base import TokenFormat
from ..sim.faults import FaultConfig
from ..sim.oracle import OraclePolicy
from ..sim.runner import SimConfig, run_sim
from ..sim.truth import Question
from .length_plan import trained_span

MODES = ("fixed", "hsa")


@dataclass
class BuildSettings:
    out: Path
    train_episodes: int = 400
    dev_episodes: int = 100
    seed: int = 0
    n_variants: int = 16
    locale: str = "en"
    fault_rate: float = 0.1
    """Share of tool calls with an injected, first-attempt-only fault (teaches recovery)."""
    fmt: str = "parquet"
    domain: Domain | str | None = None
    """The domain (default: the one the harness names, else live_commerce)."""
    harness: Path | str | None = None
    """The base harness folder or shipped name (default: the domain's own)."""
    hsa_base: bool = False
    """HSA episodes also run on the base harness (one configuration among the variants)."""
    hsa_base_share: float | None = None
    """With `hsa_base`: the share of HSA episodes on the base harness (None: 1/(n_variants+1))."""
    think: Literal["short", "long"] = "short"
    """The oracle's reasoning: one templated sentence per step, or 1-4 sentences weighing the
    question, the rule and the tool (what HSA-RL's length penalties have to compress)."""

    def base(self) -> tuple[Harness, Domain]:
        """The base harness and its domain."""
        h = load_harness(self.harness) if self.harness else get_domain(self.domain).harness()
        return h, domain_of(h, self.domain)


def trace_messages(trace: Trace) -> list[dict[str, Any]]:
    """The episode as OpenAI-style chat messages (assistant turns keep their raw text)."""
    messages: list[dict[str, Any]] = []
    for span in trace.spans:
        role = {"system": "system", "user": "user", "tool_output": "tool"}.get(span.segment)
        if span.segment in GENERATED and span.source == "model":
            if messages and messages[-1]["role"] == "assistant" and messages[-1]["_turn"] == span.turn:
                messages[-1]["content"] += span.text
            else:
                messages.append({"role": "assistant", "content": span.text, "_turn": span.turn})
        elif role is not None:
            messages.append({"role": role, "content": span.text})
        elif span.segment == "reply":  # runtime fallback text
            messages.append({"role": "assistant", "content": span.text, "_turn": span.turn})
    for m in messages:
        m.pop("_turn", None)
    return messages


def trace_row(trace: Trace, tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    view = trace.training_view()
    meta = trace.meta
    first, last = trained_span(view.loss_mask)
    return {
        "episode_key": meta.get("episode_key", trace.episode_id),
        "question_id": meta.get("question_id", ""), "category": meta.get("category", ""),
        "split": meta.get("split", ""), "locale": trace.locale,
        "template_id": meta.get("template_id", ""), "product_ids": meta.get("product_ids", []),
        "harness_name": trace.harness_name, "harness_hash": trace.harness_hash,
        "messages": json.dumps(trace_messages(trace), ensure_ascii=False),
        "tools": json.dumps(list(tools), ensure_ascii=False),
        "final_reply": trace.final_reply,
        "faults": [e.data.get("fault", "") for e in trace.events if e.kind == "fault_injected"],
        "input_ids": view.input_ids, "loss_mask": view.loss_mask, "segment_ids": view.segment_ids,
        "n_tokens": len(view.input_ids), "n_trained": sum(view.loss_mask),
        "first_trained": first, "last_trained": last,
    }


def build_datasets(settings: BuildSettings, token_format: TokenFormat,
                   progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Write <out>/<mode>/<split>.<fmt> for mode in fixed/hsa and split in train/dev, the
    traces beside them, and <out>/manifest.json; returns the manifest."""
    from datasets import Dataset

    settings.out.mkdir(parents=True, exist_ok=True)
    faults = (FaultConfig(rates={"timeout": settings.fault_rate / 2,
                                 "server_error": settings.fault_rate / 2},
                          seed=settings.seed, first_call_only=True)
              if settings.fault_rate > 0 else None)
    manifest: dict[str, Any] = {
        "created": datetime.now(UTC).isoformat(timespec="seconds"), "seed": settings.seed,
        "locale": settings.locale, "fault_rate": settings.fault_rate,
        "hsa_base": settings.hsa_base, "hsa_base_share": settings.hsa_base_share, "modes": {},
    }
    sizes = {"train": settings.train_episodes, "dev": settings.dev_episodes}
    base, domain = settings.base()
    for mode in MODES:
        manifest["modes"][mode] = {}
        for split, n in sizes.items():
            config = SimConfig(episodes=n, seed=settings.seed, split=split,  # type: ignore[arg-type]
                               locale=settings.locale,  # type: ignore[arg-type]
                               variants="none" if mode == "fixed" else "train",
                               n_variants=settings.n_variants, faults=faults, harness=str(base.root),
                               include_base=settings.hsa_base and mode == "hsa",
                               base_share=settings.hsa_base_share if settings.hsa_base else None)
            traces_path = settings.out / mode / f"{split}.traces.jsonl"

            def policy(h: Harness, qs: Sequence[Question]) -> OraclePolicy:
                return domain.oracle(h, qs, token_format=token_format, think_style=settings.think)

            label = f"{mode}/{split}"

            def report(done: int, total: int, label: str = label) -> None:
                if progress is not None:
                    progress(label, done, total)

            run_sim(config, policy, traces_path, source=domain, resume=True, on_progress=report)
            traces = list(read_traces(traces_path))
            tools_by_hash = _tools_by_hash(base, traces_path.parent / "variants")
            rows = [trace_row(t, tools_by_hash.get(t.harness_hash, [])) for t in traces]
            path = settings.out / mode / f"{split}.{settings.fmt}"
            ds = Dataset.from_list(rows)
            if settings.fmt == "parquet":
                ds.to_parquet(str(path))
            else:
                ds.to_json(str(path), lines=True, force_ascii=False)
            manifest["modes"][mode][split] = {
                "path": str(path.relative_to(settings.out)), "rows": len(rows),
                "harness_hashes": sorted({r["harness_hash"] for r in rows}),
                "categories": _count(r["category"] for r in rows),
                "with_faults": sum(1 for r in rows if r["faults"]),
                "tokens": sum(r["n_tokens"] for r in rows),
                "trained_tokens": sum(r["n_trained"] for r in rows),
                **length_summary(rows),
                "question_ids": sorted({r["question_id"] for r in rows}),
            }
    manifest["same_questions_in_both_modes"] = all(
        manifest["modes"]["fixed"][s]["question_ids"] == manifest["modes"]["hsa"][s]["question_ids"]
        for s in sizes)
    manifest["disjoint"] = split_report(domain, base, settings.seed, settings.locale, sizes)
    manifest["system_prompt_tokens"] = system_prompt_tokens(token_format, settings.locale, base)
    for mode in MODES:
        for split in sizes:
            manifest["modes"][mode][split].pop("question_ids")
    (settings.out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
    return manifest


def system_prompt_tokens(token_format: TokenFormat, locale: str, base: Harness) -> int:
    """Tokens of the base harness's rendered system prompt: every row and every evaluated turn
    pays them, so the report states them beside the row lengths."""
    return len(token_format.encode(base.render(locale).system_prompt))


def split_report(domain: Domain, base: Harness, seed: int, locale: str,
                 sizes: dict[str, int]) -> dict[str, Any]:
    """Items (products, orders, ...) and templates per split, and whether any two splits share one."""
    rules = base.rules
    sets: dict[str, dict[str, set[str]]] = {}
    for split in ("train", "dev", "test"):
        qs = domain.questions(rules, n=max(sizes.get(split, 0), 200), seed=seed, split=split,
                              locale=locale)
        sets[split] = {"products": {p for q in qs for p in q.product_ids},
                       "templates": {q.template_id for q in qs}}
    report: dict[str, Any] = {}
    ok = True
    for a, b in (("train", "dev"), ("train", "test"), ("dev", "test")):
        for kind in ("products", "templates"):
            shared = sorted(sets[a][kind] & sets[b][kind])
            report[f"{kind}:{a}&{b}"] = shared
            ok = ok and not shared
    report["ok"] = ok
    return report


def _tools_by_hash(base: Harness, variants_dir: Path) -> dict[str, list[dict[str, Any]]]:
    harnesses = [base]
    if variants_dir.is_dir():
        harnesses += [load_harness(p) for p in sorted(variants_dir.iterdir())
                      if (p / "harness.yaml").is_file()]
    return {h.content_hash: h.render().tools for h in harnesses}


def length_summary(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The longest row and the furthest trained token, overall and per category."""
    def longest(rs: Sequence[dict[str, Any]]) -> dict[str, int]:
        return {"max_tokens": max((r["n_tokens"] for r in rs), default=0),
                "max_last_trained": max((r["last_trained"] for r in rs), default=0)}

    by_category: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_category.setdefault(r["category"], []).append(r)
    return {**longest(rows),
            "lengths_by_category": {c: {"rows": len(rs), **longest(rs)}
                                    for c, rs in sorted(by_category.items())}}


def _count(items: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for x in items:
        out[x] = out.get(x, 0) + 1
    return dict(sorted(out.items()))

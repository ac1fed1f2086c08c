"""general_if: general instruction following, scored by the real IFEval / IFBench checkers.

Prompts: about two thirds synthesised from the IFEval registry (`synthesize_if_prompts("eval")`:
base tasks and argument values OPD training never sees), one third IFBench test prompts whose
checkers run offline (`if_data.load_ifbench`, a seeded sample). `--questions FILE` replaces
both with the user's rows in the IFEval format (one JSON object per line: key, prompt,
instruction_id_list, kwargs; ids from the IFEval registry, or IFBench ones with
"source": "ifbench").

The model answers as a plain chat: one user message, no system prompt of ours, no harness, no
tools. Think blocks are stripped before checking; the checkers run with NLTK patched offline
(`if_check.offline_nltk`). Metrics: IFEval's `prompt_strict`, `instruction_strict`,
`prompt_loose`, `instruction_loose`.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from ..agent.loop import generate_safely
from ..models.base import ChatMessage, ChatModel, ModelRequest
from .context import SuiteContext
from .episodes import check_backend
from .if_check import Benchmark, IFScore, aggregate, check_answer, registry, strip_think
from .if_data import load_ifbench
from .if_prompts import IFPrompt, synthesize_if_prompts
from .result import EvalSettings, SuiteResult, write_jsonl_atomic

NAME = "general_if"


def is_if_file(path: Path) -> bool:
    """True when the first non-blank line of `path` is an IFEval-format row."""
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(row, dict) and "instruction_id_list" in row
    return False


def load_if_file(path: Path) -> list[IFPrompt]:
    """User prompts in the IFEval row format; every bad line reported as file:line."""
    prompts: list[IFPrompt] = []
    problems: list[str] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("expected a JSON object")
            row.setdefault("key", str(lineno))
            row["kwargs"] = [{k: v for k, v in (kw or {}).items() if v is not None}
                             for kw in row.get("kwargs") or [{} for _ in row.get("instruction_id_list", [])]]
            p = IFPrompt.model_validate(row)
        except (ValueError, ValidationError) as exc:
            problems.append(f"{path}:{lineno}: {str(exc).splitlines()[0]}")
            continue
        reg = registry("ifbench" if p.source == "ifbench" else "ifeval")
        unknown = [i for i in p.instruction_id_list if i not in reg]
        if unknown or len(p.kwargs) != len(p.instruction_id_list):
            problems.append(f"{path}:{lineno}: " + (f"unknown instruction ids {unknown}" if unknown else
                                                    "kwargs must have one entry per instruction id"))
            continue
        prompts.append(p)
    if problems:
        raise ValueError("\n".join(problems))
    return prompts


def prompts_for(ctx: SuiteContext) -> tuple[list[IFPrompt], dict[str, object]]:
    note = ""
    if ctx.questions_path is not None:
        if is_if_file(ctx.questions_path):
            user = load_if_file(ctx.questions_path)[:ctx.n]
            return user, {"sources": {"user": len(user)}}
        note = f"{ctx.questions_path} is not in the IFEval format; the built-in prompts were used"
    n_bench = ctx.n // 3
    synth = synthesize_if_prompts("eval", ctx.n - n_bench, seed=ctx.seed)
    info: dict[str, object] = {"sources": {"synthetic": len(synth), "ifbench": 0}, "note": note}
    if n_bench == 0:
        return synth, info
    bench = load_ifbench()
    picked = random.Random(f"general_if/{ctx.seed}").sample(bench.prompts, min(n_bench, len(bench.prompts)))
    info.update(sources={"synthetic": len(synth), "ifbench": len(picked)}, ifbench_kept=len(bench.prompts),
                ifbench_total=bench.total, ifbench_dropped_instructions=bench.dropped_instructions)
    return synth + picked, info


def answer(model: ChatModel, prompts: Sequence[IFPrompt], settings: EvalSettings,
           ctx: SuiteContext | None = None) -> tuple[list[str], list[str]]:
    """The model's plain-chat answers (raw, think blocks included), decoded in batches, and the
    backend errors met (a failed answer is empty and fails its instructions)."""
    fmt = model.token_format()
    answers: list[str] = []
    errors: list[str] = []
    for start in range(0, len(prompts), settings.batch_size):
        chunk = prompts[start:start + settings.batch_size]
        requests = []
        for p in chunk:
            user = ChatMessage("user", p.prompt)
            # prefix_ids renders one message alone (any role; user text neutralised)
            ids = (fmt.prefix_ids(user, []) + fmt.generation_prompt_ids([user], [])
                   if fmt is not None else None)
            requests.append(ModelRequest(messages=[user], prompt_ids=ids,
                                         max_new_tokens=settings.if_max_new_tokens))
        outputs = generate_safely(model, requests)
        for out in outputs:
            if out.error:
                answers.append("")
                errors.append(f"{out.error.kind}: {out.error}")
                continue
            text = out.text
            if fmt is not None and out.token_ids:
                ids = out.token_ids[:-1] if out.token_ids[-1] == fmt.eos_id else out.token_ids
                text = fmt.decode(ids)
            answers.append(text)
        if ctx is not None:
            ctx.tick(len(answers), len(prompts))
    return answers, errors


def run(ctx: SuiteContext) -> SuiteResult:
    started = time.perf_counter()
    prompts, info = prompts_for(ctx)
    answers, errors = answer(ctx.model, prompts, ctx.settings, ctx)
    check_backend(errors, ctx.settings, "general_if")
    scores: list[IFScore] = []
    for p, a in zip(prompts, answers, strict=True):
        bench: Benchmark = "ifbench" if p.source == "ifbench" else "ifeval"
        scores.append(check_answer(bench, p.key, p.prompt, p.instruction_id_list, p.kwargs, a))
    by_source = {src: aggregate([s for s, p in zip(scores, prompts, strict=True) if p.source == src])
                 for src in sorted({p.source for p in prompts})}
    records = [{"key": p.key, "source": p.source, "instructions": p.instruction_id_list,
                "strict": list(s.strict), "loose": list(s.loose), "answer": strip_think(a)[:400]}
               for p, s, a in zip(prompts, scores, answers, strict=True)]
    path = ctx.out_dir / f"{NAME}.answers.jsonl"
    write_jsonl_atomic(path, [json.dumps({**r, "prompt": p.prompt, "raw": a}, ensure_ascii=False)
                              for r, p, a in zip(records, prompts, answers, strict=True)])
    return SuiteResult(suite=NAME, metrics=aggregate(scores), n=len(prompts), model_id=ctx.model.model_id,
                       seconds=time.perf_counter() - started, traces=str(path),
                       details={**info, "by_source": by_source, "prompts": records,
                                "backend_errors": len(errors), "first_error": errors[0] if errors else "",
                                "nltk": "punkt replaced by an offline splitter (if_check.offline_nltk)"})

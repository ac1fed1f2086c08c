"""End-to-end turn latency of the harness agent, and speculative decoding by prompt lookup.

agent      user messages through the agent loop (Agent(the domain's harness,
           LocalModel.default()), tools included), in-process, prefix cache warm (as in a
           long-lived server): p50/p95/p99 of each episode's wall time, time to first token and
           generated tokens/s at each concurrency (episodes run together via Agent.run_many).
           Plain greedy at every concurrency; prompt lookup at concurrency 1 (it decodes a
           request alone; batched requests fall back to the plain decoder).
domain     "domain replies": rendered harness + user question + one tool result (the domain's
           `tool_turns`; live commerce: get_product_details' catalog JSON), `--domain-tokens`
           greedy tokens with and without prompt lookup: tokens/s, speed-up, acceptance rate,
           identical output.
held-out   the agent's own replies after a tool result, in the conversation it really has
           (its own tool call, the tool's real output): test-split questions through the
           greedy agent loop, each reply's prompt as the loop sent it, then every mode on it.
mtp        trained draft heads on the target's hidden state (`hatkit train draft`; `--model CKPT`
           finds CKPT/draft_heads, or `--heads DIR`).
assisted   decoding with a draft model: `--draft-model PATH` (a checkpoint folder with the same
           tokenizer), or `--draft-layers N` (the default model's first N layers as the draft,
           weights shared; no second model with SmolLM2's tokenizer is installed here, so
           this early-exit draft is what can be measured offline). Domain replies and the
           agent loop at concurrency 1; acceptance rate; identical greedy output checked.
memory     peak RSS of this process (VmHWM) and its growth during the concurrency runs.
--url      measure a running hatkit server instead: streamed chat completions (SSE), time to
           first content chunk and full turn per request, and the server's peak RSS (/healthz).

Goal: >= 1.5x tokens/s from prompt lookup on domain replies with identical greedy output.
A run whose episodes hit backend errors, or that generated nothing, stops before any verdict.
Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from hatkit import __version__
from hatkit.agent import Agent
from hatkit.domain import Domain, get_domain
from hatkit.models.base import ChatMessage, ModelRequest
from hatkit.models.chat_format import tool_result_text
from hatkit.models.compiled_step import COMPILED_SUFFIX
from hatkit.models.local import LocalModel
from hatkit.serve.latency_http import run_url
from hatkit.serve.memory import RssSampler, peak_rss_bytes
from hatkit.serve.stats import pct


def _gen_tokens(trace: Any) -> int:
    return sum(trace.segment_tokens(s) for s in ("reply", "think_reply", "think_tool", "tool_call"))


def run_agent(agent: Agent, questions: list[str], concurrency: int) -> dict[str, Any]:
    lat: list[float] = []
    ttft: list[float] = []
    tokens = 0
    replies: list[str] = []
    started = time.perf_counter()
    for i in range(0, len(questions), concurrency):
        traces = agent.run_many(questions[i:i + concurrency])
        errors = [f"{e.kind}: {e.data}" for t in traces for e in t.events if e.kind == "model_error"]
        if errors:  # a fallback reply is not a latency figure
            raise SystemExit(f"latency: {len(errors)} backend error(s), first: {errors[0][:300]}; "
                             "no verdict")
        for t in traces:
            lat.append(t.timings.total_s)
            if t.timings.ttft_s is not None:
                ttft.append(t.timings.ttft_s)
            tokens += _gen_tokens(t)
            replies.append(t.final_reply)
    wall = time.perf_counter() - started
    if not tokens:
        raise SystemExit(f"latency: no tokens generated at concurrency {concurrency}; no verdict")
    return {"episodes": len(lat), "p50_s": pct(lat, 50), "p95_s": pct(lat, 95), "p99_s": pct(lat, 99),
            "ttft_p50_s": pct(ttft, 50), "tokens": tokens, "wall_s": wall,
            "tokens_per_s": tokens / wall if wall else 0.0, "replies": replies}


def domain_requests(agent: Agent, n: int, max_new: int, domain: Domain) -> list[ModelRequest]:
    """`n` prompts of a user message answered from one tool result (the domain's `tool_turns`)."""
    fmt = agent.format
    assert fmt is not None and agent.prefix_ids is not None
    turns = domain.tool_turns()
    if not turns:
        raise SystemExit(f"latency: domain '{domain.name}' has no tool turns for the domain-replies bench")
    reqs = []
    visible = {t.canonical: name for name, t in agent.harness.tools.items()}
    for turn in (turns * (n // len(turns) + 1))[:n]:
        history = [agent.system]
        ids = list(agent.prefix_ids)
        for msg in (ChatMessage("user", turn.message),
                    ChatMessage("tool", tool_result_text(turn.output),
                                name=visible.get(turn.tool, turn.tool))):
            ids += fmt.message_ids(history, msg, agent.schemas)
            history.append(msg)
        ids += fmt.generation_prompt_ids(history, agent.schemas)
        reqs.append(ModelRequest(history, tools=agent.schemas, prompt_ids=ids,
                                 prefix_len=len(agent.prefix_ids), max_new_tokens=max_new))
    return reqs


def agent_reply_requests(agent: Agent, messages: Sequence[str], n: int, max_new: int) -> list[ModelRequest]:
    """Up to `n` prompts of the agent's own replies after a tool result: `messages` through the
    greedy agent loop; of each episode whose last model call followed a tool's output, that
    call's prompt, token for token as the loop sent it (the conversation with the model's own
    tool call and the tool's real result). Held-out domain replies, in the shape the agent
    meets them; the tool turns above give the tool result without the call that asked for it."""
    reqs: list[ModelRequest] = []
    for trace in agent.run_many(list(messages)):
        if len(reqs) == n or not trace.has_tokens() or trace.events_of("model_error"):
            continue
        made = [s for s in trace.spans if s.generated and s.source == "model"]
        if not made:
            continue
        last = made[-1].turn
        if not any(s.segment == "tool_output" and s.turn == last for s in trace.spans):
            continue
        ids: list[int] = []
        for s in trace.spans:
            if s.turn == last and s.generated:
                break
            ids += s.token_ids or []
        reqs.append(ModelRequest((), prompt_ids=ids, prefix_len=len(agent.prefix_ids or []),
                                 max_new_tokens=max_new))
    return reqs


def run_domain(model: LocalModel, reqs: list[ModelRequest]) -> dict[str, Any]:
    before = dict(model.stats)
    ids: list[list[int]] = []
    secs = ttft = 0.0
    for r in reqs:
        out = model.generate([r])[0]
        if out.error:
            raise RuntimeError(out.error)
        ids.append(out.token_ids or [])
        secs += out.total_s
        ttft += out.ttft_s or 0.0
    tokens = sum(len(x) for x in ids)
    decode = secs - ttft  # after the first token: the part speculation can speed up
    return {"tokens": tokens, "seconds": secs, "tokens_per_s": tokens / secs if secs else 0.0,
            "decode_tokens_per_s": (tokens - len(ids)) / decode if decode > 0 else 0.0, "ids": ids,
            "acceptance": _acceptance(model, before) if model.speculative else None,
            "tokens_per_pass": _tokens_per_pass(model, before, len(reqs)) if model.speculative else 1.0,
            "branch_tokens": (model.stats.get("spec_branch_accepted", 0)
                              - before.get("spec_branch_accepted", 0)) if model.speculative else 0}


def main(argv: Sequence[str] | None = None, base: LocalModel | None = None) -> None:
    """`base`: the model to measure (default: the embedded default model)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=4, help="viewer messages per concurrency level")
    ap.add_argument("--concurrency", default="1,2,4,8", help="comma-separated levels")
    ap.add_argument("--max-new-tokens", type=int, default=64, help="per model call in the agent loop")
    ap.add_argument("--domain", default=None, help="the domain whose harness and tool turns are "
                    "measured (default live_commerce)")
    ap.add_argument("--domain-prompts", type=int, default=4, help="domain-reply prompts")
    ap.add_argument("--domain-tokens", type=int, default=96, help="greedy tokens per domain reply")
    ap.add_argument("--reply-prompts", type=int, default=8, help="held-out agent replies: test-split "
                    "questions through the greedy agent loop, each reply after a tool result "
                    "measured in every mode from the prompt the loop sent (0: not measured)")
    ap.add_argument("--num-draft", type=int, default=8, help="prompt-lookup draft length")
    ap.add_argument("--max-ngram", type=int, default=3)
    ap.add_argument("--min-ngram", type=int, default=2, help="shortest tail n-gram to draft from")
    ap.add_argument("--draft-model", default=None,
                    help="checkpoint folder of a draft model with the same tokenizer")
    ap.add_argument("--draft-layers", type=int, default=0,
                    help="use the default model's first N layers as the draft (0: no draft "
                         "unless --draft-model)")
    ap.add_argument("--draft-tokens", type=int, default=5, help="tokens the draft proposes per step")
    ap.add_argument("--model", default=None, help="a checkpoint folder to measure (default: the "
                    "embedded default model)")
    ap.add_argument("--heads", default=None, help="MTP draft heads (`hatkit train draft`); default: "
                    "the --model checkpoint's draft_heads/ when it has them")
    ap.add_argument("--lookup-branch", type=int, default=2, help="with MTP heads, also measure "
                    "'mtp+lookup': each verify pass checks up to N prompt-lookup tokens beside the "
                    "heads' draft (0: not measured)")
    ap.add_argument("--draft-confidence", type=float, default=None, help="with MTP heads: a draft "
                    "stops before the first guess where the heads' joint probability falls below "
                    "this (default hatkit.models.mtp.DRAFT_CONFIDENCE; 0: always all heads)")
    ap.add_argument("--compare-confidence", type=float, default=None, help="with MTP heads: also "
                    "measure 'mtp@X' and 'mtp+lookup@X' with this draft confidence, side by side")
    ap.add_argument("--compiled", action="store_true", help="also measure greedy (and MTP with the lookup "
                    "branch) with decode steps compiled by inductor (`+compiled`), compiled before "
                    "timing (a minute or more per row bucket)")
    ap.add_argument("--skip-agent", action="store_true", help="only the domain-reply measurement")
    ap.add_argument("--url", default=None, help="measure a running hatkit server instead")
    args = ap.parse_args(argv)
    questions = (list(get_domain(args.domain).sample_messages) * 10)[: max(1, args.questions)]
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]

    if args.url:
        res = run_url(args.url, questions, levels)
        failed = [c for c in levels if res[str(c)]["non_200"] == res[str(c)]["requests"]]
        if failed:
            raise SystemExit(f"latency: no request answered 200 at concurrency {failed}; no verdict")
        print(f"server peak RSS: {res['server_peak_rss_mb']} MiB")
        print(json.dumps({"bench": "latency", "url": args.url, "questions": len(questions),
                          "by_concurrency": {k: {m: round(x, 3) for m, x in v.items()}
                                             for k, v in res.items()
                                             if k not in ("spec", "server_peak_rss_mb")},
                          "server_peak_rss_mb": res["server_peak_rss_mb"],
                          "spec_decode": res.get("spec"), "hatkit": __version__}))
        return

    import torch

    if base is None:
        base = LocalModel.from_pretrained(args.model) if args.model else LocalModel.default()
    modes = _decoders(base, args)
    domain = get_domain(args.domain)
    harness = domain.harness()
    object.__setattr__(harness.spec.model, "max_new_tokens", args.max_new_tokens)  # bench-only override
    agents = {name: Agent(harness, m) for name, m in modes.items()}
    reqs = domain_requests(agents["greedy"], args.domain_prompts, args.domain_tokens, domain)
    for m in modes.values():  # warm up: prefix caches (a long-lived server has them), torch setup
        m.generate([replace(reqs[0], max_new_tokens=2)])

    # -- domain replies: every mode on the same prompts --
    replies = _compare(modes, reqs)
    held: dict[str, dict[str, Any]] = {}
    if args.reply_prompts:
        tests = [q.text for q in domain.questions(harness.rules, n=3 * args.reply_prompts, seed=0,
                                                    split="test")]
        # the harness as shipped (its own max_new_tokens, not the bench's cap): whole tool calls
        held_reqs = agent_reply_requests(Agent(domain.harness(), modes["greedy"]), tests,
                                         args.reply_prompts, args.domain_tokens)
        if not held_reqs:
            raise SystemExit("latency: no test question led to a reply after a tool result; no verdict")
        held = _compare(modes, held_reqs)

    # -- agent loop: greedy at every concurrency, speculative modes at 1 --
    agent_rows: dict[str, dict[str, Any]] = {}
    rss_growth_mb = 0.0
    if not args.skip_agent:
        with RssSampler() as rss:
            for c in levels:
                qs = (questions * (c // len(questions) + 1))[:max(len(questions), c)]
                agent_rows[f"greedy c={c}"] = run_agent(agents["greedy"], qs, c)
        rss_growth_mb = rss.growth / 2**20
        for name in modes:
            if name != "greedy":
                before = dict(modes[name].stats)
                row = agent_rows[f"{name} c=1"] = run_agent(agents[name], questions, 1)
                if modes[name].speculative:  # greedy+compiled drafts nothing
                    row["acceptance"] = _acceptance(modes[name], before)
                if "greedy c=1" in agent_rows:
                    row["identical"] = sum(x == y for x, y in zip(
                        agent_rows["greedy c=1"]["replies"], row["replies"], strict=False))

    print(f"{'agent loop (warm prefix)':24} {'eps':>4} {'p50 s':>7} {'p95 s':>7} {'p99 s':>7} "
          f"{'ttft p50':>9} {'tok/s':>7} {'accept':>7} {'same':>5}")
    for name, r in agent_rows.items():
        acc = f"{r['acceptance']:.1%}" if "acceptance" in r else "-"
        print(f"{name:24} {r['episodes']:4d} {r['p50_s']:7.2f} {r['p95_s']:7.2f} {r['p99_s']:7.2f} "
              f"{r['ttft_p50_s']:9.3f} {r['tokens_per_s']:7.1f} {acc:>7} {r.get('identical', '-')!s:>5}")
    for title, rows in (("domain replies", replies), ("held-out agent replies", held)):
        if rows:
            _print_replies(title, rows)
    best = max((r["speedup"] for n, r in replies.items() if n != "greedy"), default=0.0)
    print(f"goal >= 1.5x tokens/s on domain replies: {'met' if best >= 1.5 else 'NOT met'} "
          f"(best {best:.2f}x)")
    for name, r in held.items():
        if name.startswith("mtp"):  # issue 18's trained draft, on replies no head trained on
            tag = "own_" if "own_speedup" in r else ""  # compiled: against greedy on the same kernels
            ok = r["acceptance"] >= 0.6 and r[f"{tag}speedup"] >= 1.5 and r[f"{tag}identical"] == r["prompts"]
            print(f"goal acceptance >= 60%, >= 1.5x, identical output on held-out replies, {name}: "
                  f"{'met' if ok else 'NOT met'} ({r['acceptance']:.1%}, {r[f'{tag}speedup']:.2f}x, "
                  f"{r[f'{tag}identical']}/{r['prompts']}{' against greedy+compiled' if tag else ''})")
    if "draft" not in modes:
        print("assisted decoding (draft model): not measured - pass --draft-model PATH or "
              "--draft-layers N (no second model with SmolLM2's tokenizer is installed here)")
    peak_mb = peak_rss_bytes() / 2**20
    print(f"memory: peak RSS {peak_mb:.0f} MiB; growth during the concurrency runs "
          f"{rss_growth_mb:.1f} MiB")

    def clean(r: dict[str, Any]) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()
                if k not in ("replies", "ids")}

    print(json.dumps({
        "bench": "latency", "model": base.model_id, "questions": len(questions),
        "max_new_tokens": args.max_new_tokens, "agent": {k: clean(v) for k, v in agent_rows.items()},
        "domain": {"prompts": len(reqs), "max_new_tokens": args.domain_tokens,
                   **{k: clean(v) for k, v in replies.items()}},
        "heldout_replies": {"prompts": held["greedy"]["prompts"], "max_new_tokens": args.domain_tokens,
                            **{k: clean(v) for k, v in held.items()}} if held else None,
        "draft": getattr(args, "draft_desc", None), "peak_rss_mb": round(peak_mb, 1),
        "rss_growth_concurrency_mb": round(rss_growth_mb, 1),
        "hatkit": __version__, "torch": torch.__version__, "python": platform.python_version(),
        "threads": torch.get_num_threads(),
    }))


def _compare(modes: dict[str, LocalModel], reqs: list[ModelRequest]) -> dict[str, dict[str, Any]]:
    """Every mode on the same prompts; speed-up and identical output against greedy's. A compiled
    mode is also compared with compiled greedy (`own_*`): compiled kernels round differently,
    so speculation's "identical output" is checked against greedy on the same kernels."""
    rows = {name: run_domain(m, reqs) for name, m in modes.items()}
    for name, r in rows.items():
        r["prompts"] = len(reqs)
        refs = [("", rows["greedy"])]
        if name.endswith(COMPILED_SUFFIX) and "greedy" + COMPILED_SUFFIX in rows:
            refs.append(("own_", rows["greedy" + COMPILED_SUFFIX]))
        for tag, ref in refs:
            r[f"{tag}identical"] = sum(a == b for a, b in zip(ref["ids"], r["ids"], strict=True))
            r[f"{tag}speedup"] = r["tokens_per_s"] / ref["tokens_per_s"] if ref["tokens_per_s"] else 0.0
    return rows


def _print_replies(title: str, rows: dict[str, dict[str, Any]]) -> None:
    print(f"\n{title:24} {'tokens':>7} {'seconds':>8} {'tok/s':>7} {'decode tok/s':>13} "
          f"{'speed-up':>9} {'accept':>7} {'tok/pass':>8} {'same':>5}")
    for name, r in rows.items():
        acc = f"{r['acceptance']:.1%}" if r["acceptance"] is not None else "-"
        own = (f"  (against greedy+compiled: {r['own_speedup']:.2f}x, same {r['own_identical']}/"
               f"{r['prompts']})" if "own_speedup" in r else "")
        print(f"{name:24} {r['tokens']:7d} {r['seconds']:8.2f} {r['tokens_per_s']:7.1f} "
              f"{r['decode_tokens_per_s']:13.1f} {r['speedup']:8.2f}x {acc:>7} "
              f"{r['tokens_per_pass']:8.2f} {r['identical']}/{r['prompts']}{own}")


def _decoders(base: LocalModel, args: argparse.Namespace) -> dict[str, LocalModel]:
    """The decoding modes side by side, all on the same weights."""
    modes = {"greedy": LocalModel(base.model, base.tok, base.model_id, max_batch=8),
             "prompt_lookup": LocalModel(base.model, base.tok, base.model_id, max_batch=8,
                                         speculative="prompt_lookup", num_draft=args.num_draft,
                                         max_ngram=args.max_ngram, min_ngram=args.min_ngram)}
    draft: Any = None
    draft_tok: Any = None
    if args.draft_model:
        draft, args.draft_desc = args.draft_model, f"checkpoint {args.draft_model}"
    elif args.draft_layers:
        from hatkit.models.assisted import truncated_draft

        draft, draft_tok = truncated_draft(base.model, args.draft_layers), base.tok
        args.draft_desc = (f"first {args.draft_layers} of {base.model.config.num_hidden_layers} "
                           "layers of the target (shared weights)")
    if draft is not None:
        modes["draft"] = LocalModel(base.model, base.tok, base.model_id, max_batch=8,
                                    draft_model=draft, draft_tokenizer=draft_tok,
                                    draft_tokens=args.draft_tokens)
    from hatkit.models.mtp import HEADS_DIR, MTPHeads, has_heads

    heads: Any = None
    if args.heads:
        if not has_heads(Path(args.heads)):
            raise SystemExit(f"--heads {args.heads}: no saved heads there (train them with "
                             "`hatkit train draft`)")
        heads, where = MTPHeads.load(Path(args.heads), target=base.model), args.heads
    elif args.model and has_heads(Path(args.model) / HEADS_DIR):
        heads, where = MTPHeads.for_checkpoint(Path(args.model), base.model), Path(args.model) / HEADS_DIR
    if heads is not None:
        bars = {"": args.draft_confidence}
        if args.compare_confidence is not None:
            bars[f"@{args.compare_confidence:g}"] = args.compare_confidence
        for tag, bar in bars.items():
            modes[f"mtp{tag}"] = LocalModel(base.model, base.tok, base.model_id, max_batch=8,
                                            draft_heads=heads, lookup_branch=0, draft_confidence=bar)
            if args.lookup_branch:
                modes[f"mtp+lookup{tag}"] = LocalModel(
                    base.model, base.tok, base.model_id, max_batch=8, draft_heads=heads,
                    lookup_branch=args.lookup_branch, max_ngram=args.max_ngram, min_ngram=args.min_ngram,
                    draft_confidence=bar)
        args.draft_desc = ((getattr(args, "draft_desc", None) or "") + f" mtp heads {where}, draft "
                           f"confidence {modes['mtp'].draft_confidence}").strip()
    if args.compiled:
        _add_compiled(modes, base)
    for m in modes.values():  # same weights: one prefix KV cache serves every mode
        m._cache = modes["greedy"]._cache
    return modes


def _add_compiled(modes: dict[str, LocalModel], base: LocalModel) -> None:
    """greedy+compiled (and mtp+lookup+compiled) sharing one compiled step, compiled now by
    LocalModel.precompile: these modes decode one request at a time (max_batch 1), so one row,
    and every verify-pass bucket of the speculative mode."""
    greedy = LocalModel(base.model, base.tok, base.model_id, max_batch=1, compiled=True)
    step = greedy._compiled
    print("compiling decode steps...", flush=True)
    greedy.precompile()
    modes["greedy" + COMPILED_SUFFIX] = greedy
    spec = modes.get("mtp+lookup")
    if spec is not None:
        compiled = LocalModel(base.model, base.tok, base.model_id, max_batch=1, draft_heads=spec.heads,
                              lookup_branch=spec.lookup_branch, max_ngram=spec.max_ngram,
                              min_ngram=spec.min_ngram, draft_confidence=spec.draft_confidence,
                              compiled=True)
        compiled._compiled = step
        compiled.precompile()
        modes["mtp+lookup" + COMPILED_SUFFIX] = compiled
    print("compile seconds: " + ", ".join(f"{rows} rows{' +hidden' if h else ''} {s:.0f}"
                                          for (rows, h), s in step.compile_seconds.items()), flush=True)


def _tokens_per_pass(model: LocalModel, before: dict[str, float], calls: int) -> float:
    """Tokens emitted per forward pass of the target after the prompt's (each call's prefill
    yields its first token; each verify pass one token plus the drafts it confirms)."""
    tokens = model.stats["spec_tokens"] - before.get("spec_tokens", 0)
    steps = model.stats["spec_steps"] - before.get("spec_steps", 0)
    return (tokens - calls) / steps if steps else 1.0


def _acceptance(model: LocalModel, before: dict[str, float]) -> float:
    drafted = model.stats["spec_drafted"] - before.get("spec_drafted", 0)
    return (model.stats["spec_accepted"] - before.get("spec_accepted", 0)) / drafted if drafted else 0.0


if __name__ == "__main__":
    main()

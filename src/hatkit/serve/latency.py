"""End-to-end turn latency of the harness agent, and speculative decoding by prompt lookup.

agent      viewer messages through the agent loop (Agent(load_harness("live_commerce"),
           LocalModel.default()), tools included), in-process, prefix cache warm (as in a
           long-lived server): p50/p95/p99 of each episode's wall time, time to first token and
           generated tokens/s at each concurrency (episodes run together via Agent.run_many).
           Plain greedy at every concurrency; prompt lookup at concurrency 1 (it decodes a
           request alone; batched requests fall back to the plain decoder).
domain     "domain replies": rendered harness + viewer question + a get_product_details-style
           tool result (the product's catalog JSON), `--domain-tokens` greedy tokens with and
           without prompt lookup: tokens/s, speed-up, acceptance rate, identical output.
assisted   decoding with a draft model is not measured: no second small model with SmolLM2's
           tokenizer is available offline here.
--url      measure a running hatkit server instead (POST /v1/live/messages, client-side wall).

Goal: >= 1.5x tokens/s from prompt lookup on domain replies with identical greedy output.
Prints a table, then one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hatkit import __version__
from hatkit.agent import Agent
from hatkit.demo import SAMPLE_QUESTIONS
from hatkit.harness import load_harness
from hatkit.models.base import ChatMessage, ModelRequest
from hatkit.models.chat_format import tool_result_text
from hatkit.models.local import LocalModel

DOMAIN_CASES = [  # (product id, viewer question)
    ("AP-012", "Tell me about the linen blend button-down shirt: price, sizes and colors?"),
    ("AP-008", "What's the Cloudrun 3 road running shoe made of, and how much is it?"),
    ("AP-003", "Is the extra-fine merino crewneck sweater on sale? Which sizes are left?"),
    ("AP-006", "How warm is the packable down puffer jacket and what does it cost?"),
    ("AP-009", "Give me the details of the Tempo trail running shoe."),
    ("AP-001", "What colors does the everyday fleece pullover hoodie come in?"),
]


def pct(xs: Sequence[float], q: float) -> float:
    """Percentile by linear interpolation (q in 0..100)."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = (len(s) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def _gen_tokens(trace: Any) -> int:
    return sum(trace.segment_tokens(s) for s in ("reply", "think_reply", "think_tool", "tool_call"))


def run_agent(agent: Agent, questions: list[str], concurrency: int) -> dict[str, Any]:
    lat: list[float] = []
    ttft: list[float] = []
    tokens = 0
    replies: list[str] = []
    started = time.perf_counter()
    for i in range(0, len(questions), concurrency):
        for t in agent.run_many(questions[i:i + concurrency]):
            lat.append(t.timings.total_s)
            if t.timings.ttft_s is not None:
                ttft.append(t.timings.ttft_s)
            tokens += _gen_tokens(t)
            replies.append(t.final_reply)
    wall = time.perf_counter() - started
    return {"episodes": len(lat), "p50_s": pct(lat, 50), "p95_s": pct(lat, 95), "p99_s": pct(lat, 99),
            "ttft_p50_s": pct(ttft, 50), "tokens": tokens, "wall_s": wall,
            "tokens_per_s": tokens / wall if wall else 0.0, "replies": replies}


def domain_requests(agent: Agent, n: int, max_new: int) -> list[ModelRequest]:
    from hatkit.domains.live_commerce.catalog import load_catalog

    fmt = agent.format
    assert fmt is not None and agent.prefix_ids is not None
    catalog = load_catalog()
    reqs = []
    for pid, q in (DOMAIN_CASES * (n // len(DOMAIN_CASES) + 1))[:n]:
        product = catalog.product(pid)
        assert product is not None
        history = [agent.system]
        ids = list(agent.prefix_ids)
        for msg in (ChatMessage("user", q),
                    ChatMessage("tool", tool_result_text(product.model_dump(mode="json")),
                                name="get_product_details")):
            ids += fmt.message_ids(history, msg, agent.schemas)
            history.append(msg)
        ids += fmt.generation_prompt_ids(history, agent.schemas)
        reqs.append(ModelRequest(history, tools=agent.schemas, prompt_ids=ids,
                                 prefix_len=len(agent.prefix_ids), max_new_tokens=max_new))
    return reqs


def run_domain(model: LocalModel, reqs: list[ModelRequest]) -> dict[str, Any]:
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
            "decode_tokens_per_s": (tokens - len(ids)) / decode if decode > 0 else 0.0, "ids": ids}


def run_url(url: str, questions: list[str], concurrencies: list[int]) -> dict[str, Any]:
    import httpx

    def one(client: httpx.Client, q: str) -> float:
        t0 = time.perf_counter()
        r = client.post(f"{url.rstrip('/')}/v1/live/messages", json={"message": q}, timeout=300)
        r.raise_for_status()
        return time.perf_counter() - t0

    res: dict[str, Any] = {}
    with httpx.Client() as client:
        for c in concurrencies:
            qs = (questions * (c // len(questions) + 1))[:max(len(questions), c)]
            with ThreadPoolExecutor(c) as pool:
                lat = list(pool.map(lambda q: one(client, q), qs))
            res[str(c)] = {"p50_s": pct(lat, 50), "p95_s": pct(lat, 95), "p99_s": pct(lat, 99),
                           "requests": len(lat)}
            print(f"c={c:<3} p50 {res[str(c)]['p50_s']:.2f}s p95 {res[str(c)]['p95_s']:.2f}s "
                  f"p99 {res[str(c)]['p99_s']:.2f}s ({len(lat)} requests)")
        try:
            from hatkit.models.speculative import spec_acceptance_from_metrics

            res["spec"] = spec_acceptance_from_metrics(client.get(f"{url.rstrip('/')}/metrics").text)
        except Exception:  # noqa: BLE001 - metrics are optional
            res["spec"] = None
    return res


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=4, help="viewer messages per concurrency level")
    ap.add_argument("--concurrency", default="1,2,4,8", help="comma-separated levels")
    ap.add_argument("--max-new-tokens", type=int, default=64, help="per model call in the agent loop")
    ap.add_argument("--domain-prompts", type=int, default=4, help="domain-reply prompts")
    ap.add_argument("--domain-tokens", type=int, default=96, help="greedy tokens per domain reply")
    ap.add_argument("--num-draft", type=int, default=8, help="prompt-lookup draft length")
    ap.add_argument("--max-ngram", type=int, default=3)
    ap.add_argument("--min-ngram", type=int, default=2, help="shortest tail n-gram to draft from")
    ap.add_argument("--skip-agent", action="store_true", help="only the domain-reply measurement")
    ap.add_argument("--url", default=None, help="measure a running hatkit server instead")
    args = ap.parse_args(argv)
    questions = (SAMPLE_QUESTIONS * 10)[: max(1, args.questions)]
    levels = [int(c) for c in args.concurrency.split(",") if c.strip()]

    if args.url:
        res = run_url(args.url, questions, levels)
        print(json.dumps({"bench": "latency", "url": args.url, "questions": len(questions),
                          "by_concurrency": {k: {m: round(x, 3) for m, x in v.items()}
                                             for k, v in res.items() if k != "spec"},
                          "spec_decode": res.get("spec"), "hatkit": __version__}))
        return

    import torch

    base = LocalModel.default()
    plain = LocalModel(base.model, base.tok, base.model_id, max_batch=8)
    spec = LocalModel(base.model, base.tok, base.model_id, max_batch=8, speculative="prompt_lookup",
                      num_draft=args.num_draft, max_ngram=args.max_ngram,
                      min_ngram=args.min_ngram)
    harness = load_harness("live_commerce")
    object.__setattr__(harness.spec.model, "max_new_tokens", args.max_new_tokens)  # bench-only override
    a_plain, a_spec = Agent(harness, plain), Agent(harness, spec)
    # warm up: prefix caches (a long-lived server has them) and one-time torch setup
    a_plain.run("hi")
    a_spec.run("hi")

    # -- domain replies --
    reqs = domain_requests(a_plain, args.domain_prompts, args.domain_tokens)
    d_plain = run_domain(plain, reqs)
    before = dict(spec.stats)
    d_spec = run_domain(spec, reqs)
    drafted = spec.stats["spec_drafted"] - before["spec_drafted"]
    accepted = spec.stats["spec_accepted"] - before["spec_accepted"]
    d_same = sum(a == b for a, b in zip(d_plain["ids"], d_spec["ids"], strict=True))
    d_speedup = d_spec["tokens_per_s"] / d_plain["tokens_per_s"] if d_plain["tokens_per_s"] else 0.0
    d_dec_speedup = (d_spec["decode_tokens_per_s"] / d_plain["decode_tokens_per_s"]
                     if d_plain["decode_tokens_per_s"] else 0.0)

    # -- agent loop --
    agent_rows: dict[str, dict[str, Any]] = {}
    if not args.skip_agent:
        for c in levels:
            qs = (questions * (c // len(questions) + 1))[:max(len(questions), c)]
            agent_rows[f"greedy c={c}"] = run_agent(a_plain, qs, c)
        before = dict(spec.stats)
        agent_rows["prompt_lookup c=1"] = run_agent(a_spec, questions, 1)
        agent_rows["prompt_lookup c=1"]["acceptance"] = (
            (spec.stats["spec_accepted"] - before["spec_accepted"])
            / max(1.0, spec.stats["spec_drafted"] - before["spec_drafted"]))
    a_same = None
    if "greedy c=1" in agent_rows:
        a_same = sum(x == y for x, y in zip(agent_rows["greedy c=1"]["replies"],
                                            agent_rows["prompt_lookup c=1"]["replies"], strict=True))

    print(f"{'agent loop (warm prefix)':24} {'eps':>4} {'p50 s':>7} {'p95 s':>7} {'p99 s':>7} "
          f"{'ttft p50':>9} {'tok/s':>7}")
    for name, r in agent_rows.items():
        print(f"{name:24} {r['episodes']:4d} {r['p50_s']:7.2f} {r['p95_s']:7.2f} {r['p99_s']:7.2f} "
              f"{r['ttft_p50_s']:9.3f} {r['tokens_per_s']:7.1f}")
    if a_same is not None:
        print(f"agent replies identical greedy vs prompt lookup (c=1): {a_same}/{len(questions)}; "
              f"acceptance {agent_rows['prompt_lookup c=1']['acceptance']:.1%}")
    print(f"\n{'domain replies':24} {'tokens':>7} {'seconds':>8} {'tok/s':>7} {'decode tok/s':>13}")
    for name, r in (("greedy", d_plain), ("prompt lookup", d_spec)):
        print(f"{name:24} {r['tokens']:7d} {r['seconds']:8.2f} {r['tokens_per_s']:7.1f} "
              f"{r['decode_tokens_per_s']:13.1f}")
    rate = accepted / drafted if drafted else 0.0
    met = "met" if d_speedup >= 1.5 else "NOT met"
    print(f"speed-up {d_speedup:.2f}x end to end, {d_dec_speedup:.2f}x decode only (goal >= 1.5x: {met}); "
          f"acceptance {rate:.1%} ({int(accepted)}/{int(drafted)} drafted); identical greedy output "
          f"{d_same}/{len(reqs)}")
    print("assisted decoding (draft model): not measured - no draft model sharing SmolLM2's "
          "tokenizer is available offline")

    def clean(r: dict[str, Any]) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k != "replies"}

    print(json.dumps({
        "bench": "latency", "model": base.model_id, "questions": len(questions),
        "max_new_tokens": args.max_new_tokens, "agent": {k: clean(v) for k, v in agent_rows.items()},
        "agent_identical_replies": a_same,
        "domain": {"prompts": len(reqs), "max_new_tokens": args.domain_tokens,
                   "greedy_tokens_per_s": round(d_plain["tokens_per_s"], 2),
                   "prompt_lookup_tokens_per_s": round(d_spec["tokens_per_s"], 2),
                   "speedup": round(d_speedup, 3), "decode_speedup": round(d_dec_speedup, 3),
                   "greedy_decode_tokens_per_s": round(d_plain["decode_tokens_per_s"], 2),
                   "prompt_lookup_decode_tokens_per_s": round(d_spec["decode_tokens_per_s"], 2),
                   "acceptance_rate": round(rate, 4),
                   "drafted": int(drafted), "accepted": int(accepted),
                   "identical_outputs": d_same, "num_draft": args.num_draft,
                   "min_ngram": args.min_ngram},
        "assisted": "not measured: no draft model with the same tokenizer offline",
        "hatkit": __version__, "torch": torch.__version__, "python": platform.python_version(),
        "threads": torch.get_num_threads(), "spec_stats": spec.stats,
    }))


if __name__ == "__main__":
    main()

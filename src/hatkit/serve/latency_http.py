"""`hatkit bench latency --url`: latency of a running hatkit server, measured by a client.

Each request is a streamed chat completion (SSE), so the time to the first content chunk
(what a viewer waits for) is measured next to the full turn; the server's peak RSS comes from
its /healthz and speculative-decoding acceptance from its /metrics (vLLM/SGLang names too).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from .stats import pct


def run_url(url: str, questions: list[str], concurrencies: list[int]) -> dict[str, Any]:
    import httpx

    base = url.rstrip("/")

    def one(client: httpx.Client, q: str) -> tuple[float, float, int]:
        """(time to first content chunk, total, HTTP status) of one streamed completion."""
        t0 = time.perf_counter()
        first = None
        body = {"messages": [{"role": "user", "content": q}], "stream": True}
        with client.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=300) as r:
            if r.status_code != 200:
                r.read()
                return float("nan"), time.perf_counter() - t0, r.status_code
            for line in r.iter_lines():
                if first is None and line.startswith("data: {") and '"content": "' in line \
                        and '"content": ""' not in line:
                    first = time.perf_counter() - t0
        total = time.perf_counter() - t0
        return (first if first is not None else total), total, 200

    res: dict[str, Any] = {}
    with httpx.Client() as client:
        for c in concurrencies:
            qs = (questions * (c // len(questions) + 1))[:max(len(questions), c)]
            with ThreadPoolExecutor(c) as pool:
                rows = list(pool.map(lambda q: one(client, q), qs))
            lat = [t for _, t, s in rows if s == 200]
            ttft = [f for f, _, s in rows if s == 200]
            res[str(c)] = {"p50_s": pct(lat, 50), "p95_s": pct(lat, 95), "p99_s": pct(lat, 99),
                           "ttft_p50_s": pct(ttft, 50), "ttft_p95_s": pct(ttft, 95),
                           "requests": len(rows), "non_200": sum(s != 200 for _, _, s in rows)}
            r = res[str(c)]
            print(f"c={c:<3} p50 {r['p50_s']:.2f}s p95 {r['p95_s']:.2f}s p99 {r['p99_s']:.2f}s "
                  f"first chunk p50 {r['ttft_p50_s']:.2f}s ({len(rows)} requests, "
                  f"{r['non_200']} not 200)")
        try:
            from hatkit.models.speculative import spec_acceptance_from_metrics

            res["spec"] = spec_acceptance_from_metrics(client.get(f"{base}/metrics").text)
        except httpx.HTTPError:  # metrics are optional
            res["spec"] = None
        try:
            res["server_peak_rss_mb"] = client.get(f"{base}/healthz").json()["peak_rss_bytes"] / 2**20
        except (httpx.HTTPError, ValueError, KeyError, TypeError):  # an older server has none
            res["server_peak_rss_mb"] = None
    return res

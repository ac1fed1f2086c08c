"""Prometheus metrics of one server (a registry per app, so apps in one process don't clash)."""

from __future__ import annotations

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)

from ..agent import Trace
from .memory import peak_rss_bytes

LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.5, 5.0, 8.0, 12.0, 20.0, 30.0, 60.0)


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("hatkit_requests", "HTTP requests by route and status",
                                ["route", "status"], registry=r)
        self.latency = Histogram("hatkit_request_latency_seconds", "HTTP request latency",
                                 ["route"], buckets=LATENCY_BUCKETS, registry=r)
        self.turn_latency = Histogram("hatkit_turn_latency_seconds",
                                      "End-to-end agent turn latency (tools included)",
                                      buckets=LATENCY_BUCKETS, registry=r)
        self.tool_calls = Counter("hatkit_tool_calls", "Tool calls by tool", ["tool"], registry=r)
        self.tool_errors = Counter("hatkit_tool_errors", "Tool errors by tool and error type",
                                   ["tool", "error_type"], registry=r)
        self.tokens = Counter("hatkit_tokens", "Model tokens", ["kind"], registry=r)
        self.in_flight = Gauge("hatkit_in_flight", "Agent runs in flight", registry=r)
        self.rejections = Counter("hatkit_rejections", "Requests refused before running",
                                  ["reason"], registry=r)
        self.fallbacks = Counter("hatkit_fallback_replies", "Turns that ended in the fallback reply",
                                 ["reason"], registry=r)
        self.swaps = Counter("hatkit_harness_swaps", "Harness hot swaps", registry=r)
        self.peak_rss_gauge = Gauge("hatkit_peak_rss_bytes", "Peak resident memory of the "
                                    "server process (VmHWM)", registry=r)
        self.peak_rss_gauge.set_function(peak_rss_bytes)
        ProcessCollector(registry=r)  # process_resident_memory_bytes, cpu seconds, open fds

    def observe_trace(self, trace: Trace, prompt_tokens: int, completion_tokens: int) -> None:
        self.turn_latency.observe(trace.timings.total_s)
        for rec in trace.tool_calls:
            self.tool_calls.labels(rec.name).inc()
            if rec.error_type:
                self.tool_errors.labels(rec.name, rec.error_type).inc()
        for ev in trace.events_of("fallback"):
            self.fallbacks.labels(str(ev.data.get("reason", "?"))).inc()
        self.tokens.labels("prompt").inc(prompt_tokens)
        self.tokens.labels("completion").inc(completion_tokens)

    @staticmethod
    def peak_rss() -> int:
        return peak_rss_bytes()

    def render(self) -> bytes:
        return generate_latest(self.registry)

"""vLLM's Prometheus /metrics: parse a snapshot, sum a series, difference two snapshots.

Histogram deltas (sum and count) between a snapshot before and after a run give the server's
mean per request over exactly that run (e.g. `vllm:request_queue_time_seconds`); gauges such as
`vllm:num_requests_running` say what the engine is doing now (used to prove that a stopped
request was aborted). Per-request timings come from the responses instead (core/metrics).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from playground.server import http

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)')
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')

Key = tuple[str, tuple[tuple[str, str], ...]]

HISTOGRAMS = {
    "queue_ms": "vllm:request_queue_time_seconds",
    "prefill_ms": "vllm:request_prefill_time_seconds",
    "decode_ms": "vllm:request_decode_time_seconds",
    "ttft_ms": "vllm:time_to_first_token_seconds",
    "e2e_ms": "vllm:e2e_request_latency_seconds",
}


def parse(text: str) -> dict[Key, float]:
    """Prometheus text exposition -> {(name, sorted labels): value}; comments skipped."""
    out: dict[Key, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _LINE.match(line)
        if not m:
            continue
        name, labels, value = m.groups()
        try:
            v = float(value)
        except ValueError:
            continue
        lab = tuple(sorted(_LABEL.findall(labels or "")))
        out[(name, lab)] = v
    return out


def total(snapshot: dict[Key, float], name: str, **labels: str) -> float:
    """Sum of a series over every label set that matches `labels` (e.g. all engines)."""
    want = set(labels.items())
    return sum(v for (n, lab), v in snapshot.items() if n == name and want <= set(lab))


def scrape(base_url: str, timeout_s: float = 5.0) -> dict[Key, float]:
    return parse(http.metrics_text(base_url, timeout_s))


@dataclass(frozen=True)
class HistogramDelta:
    count: float
    sum_s: float

    @property
    def mean_ms(self) -> float | None:
        return self.sum_s / self.count * 1000 if self.count > 0 else None


def histogram_delta(before: dict[Key, float], after: dict[Key, float], name: str
                    ) -> HistogramDelta:
    return HistogramDelta(total(after, f"{name}_count") - total(before, f"{name}_count"),
                          total(after, f"{name}_sum") - total(before, f"{name}_sum"))


def running_requests(base_url: str) -> float:
    return total(scrape(base_url), "vllm:num_requests_running")

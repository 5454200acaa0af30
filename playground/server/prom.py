"""vLLM's Prometheus /metrics: parse a snapshot (prometheus_client's parser), sum a series,
difference two snapshots.

Histogram deltas (sum and count) between a snapshot before and after a run give the server's
mean per request over exactly that run (e.g. `vllm:request_queue_time_seconds`); gauges such as
`vllm:num_requests_running` say what the engine is doing now (used to prove that a stopped
request was aborted). Per-request timings come from the responses instead (core/metrics).
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from playground.server import http

Key = tuple[str, tuple[tuple[str, str], ...]]

HISTOGRAMS = {
    "queue_ms": "vllm:request_queue_time_seconds",
    "prefill_ms": "vllm:request_prefill_time_seconds",
    "decode_ms": "vllm:request_decode_time_seconds",
    "ttft_ms": "vllm:time_to_first_token_seconds",
    "e2e_ms": "vllm:e2e_request_latency_seconds",
}


def parse(text: str) -> dict[Key, float]:
    """Prometheus text exposition -> {(sample name, sorted labels): value}, through
    prometheus_client's parser (a counter's samples keep their `_total`, a histogram's its
    `_count`, `_sum` and `_bucket`). ValueError when the page is not the text format."""
    out: dict[Key, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = float(sample.value)
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

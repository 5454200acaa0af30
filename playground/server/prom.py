"""Server-side view: parse vLLM's Prometheus /metrics and decompose latency from deltas.

Take a snapshot before and after a run; histogram deltas (sum and count) give the server's
mean queue, prefill, decode, TTFT and E2E per request over exactly that run. Next to the
client's mean E2E, the remainder is what the server's clock does not see: HTTP, the API
server's own work before the engine (templating, tokenisation, IPC), transport and client.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from playground.core.client import http_get, server_root

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
    status, text = http_get(f"{server_root(base_url)}/metrics", timeout_s=timeout_s)
    if status != 200:
        raise OSError(f"/metrics answered HTTP {status}")
    return parse(text)


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


@dataclass(frozen=True)
class Breakdown:
    """Mean per request over one run (ms). `rest_ms` = client E2E - server E2E."""

    requests: float
    queue_ms: float | None
    prefill_ms: float | None
    decode_ms: float | None
    ttft_ms: float | None
    e2e_ms: float | None
    client_e2e_ms: float | None

    @property
    def rest_ms(self) -> float | None:
        if self.e2e_ms is None or self.client_e2e_ms is None:
            return None
        return self.client_e2e_ms - self.e2e_ms

    @property
    def residual_ms(self) -> float | None:
        """server E2E - (queue + prefill + decode): the server's own unexplained time."""
        parts = (self.queue_ms, self.prefill_ms, self.decode_ms, self.e2e_ms)
        if any(p is None for p in parts):
            return None
        q, p, d, e = parts  # type: ignore[misc]
        return e - (q + p + d)


def breakdown(before: dict[Key, float], after: dict[Key, float],
              client_e2e_ms: float | None) -> Breakdown:
    deltas = {k: histogram_delta(before, after, v) for k, v in HISTOGRAMS.items()}
    return Breakdown(requests=deltas["e2e_ms"].count, client_e2e_ms=client_e2e_ms,
                     **{k: d.mean_ms for k, d in deltas.items()})


def running_requests(base_url: str) -> float:
    return total(scrape(base_url), "vllm:num_requests_running")

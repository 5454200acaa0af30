"""Raw timestamps in, derived metrics out (definitions: ../shared/design/MEASUREMENT.md).

A metric that was not observed is None, never a fake 0. Token counts come from the server's
`usage`, never from counting chunks. All times are seconds from one monotonic clock; derived
values are milliseconds (`_ms`) or tokens per second (`_tok_s`).
"""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None


@dataclass
class RawTimings:
    """What the client observed for one request. `t_*` are clock readings in seconds."""

    streaming: bool
    t_send: float | None = None
    t_headers: float | None = None
    t_first_chunk: float | None = None
    t_first_reasoning: float | None = None
    t_first_content: float | None = None
    t_last: float | None = None  # last token chunk (streaming) or response received
    token_times: list[float] = field(default_factory=list)  # arrival of every token chunk
    # (reasoning, content) text of each token chunk, aligned with token_times (for replay)
    token_text: list[tuple[str, str]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    http_status: int | None = None
    server_metrics: dict[str, float] | None = None  # --enable-per-request-metrics

    @property
    def t_first_token(self) -> float | None:
        seen = [t for t in (self.t_first_reasoning, self.t_first_content) if t is not None]
        return min(seen) if seen else None


@dataclass(frozen=True)
class Metrics:
    ttft_ms: float | None  # first reasoning-or-content token; None when not streaming
    ttfa_ms: float | None  # first answer (content) token
    e2e_ms: float | None
    first_chunk_ms: float | None  # first SSE chunk of any kind (vllm bench's reading)
    tpot_ms: float | None
    decode_tok_s: float | None
    itl_ms: list[float]
    completion_tokens: int | None
    prompt_tokens: int | None
    reasoning_tokens: int | None

    @property
    def visible_wait_ms(self) -> float | None:
        """When the user sees the first character: TTFT streaming, E2E otherwise."""
        return self.ttft_ms if self.ttft_ms is not None else self.e2e_ms


def _ms(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return (end - start) * 1000.0


def derive(raw: RawTimings) -> Metrics:
    ttft = _ms(raw.t_send, raw.t_first_token) if raw.streaming else None
    e2e = _ms(raw.t_send, raw.t_last)
    n = raw.usage.completion_tokens
    tpot = tok_s = None
    if ttft is not None and e2e is not None and n is not None and n > 1 and e2e > ttft:
        tpot = (e2e - ttft) / (n - 1)
        tok_s = (n - 1) / ((e2e - ttft) / 1000.0)
    times = raw.token_times
    itl = [(b - a) * 1000.0 for a, b in itertools.pairwise(times)]
    return Metrics(
        ttft_ms=ttft,
        ttfa_ms=_ms(raw.t_send, raw.t_first_content) if raw.streaming else None,
        e2e_ms=e2e,
        first_chunk_ms=_ms(raw.t_send, raw.t_first_chunk) if raw.streaming else None,
        tpot_ms=tpot,
        decode_tok_s=tok_s,
        itl_ms=itl,
        completion_tokens=n,
        prompt_tokens=raw.usage.prompt_tokens,
        reasoning_tokens=raw.usage.reasoning_tokens,
    )


# ---------------------------------------------------------------------------------------------
# statistics over many requests


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no data."""
    data = sorted(values)
    if not data:
        return None
    pos = (len(data) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def median(values: Sequence[float]) -> float | None:
    return percentile(values, 50)


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    p50: float | None
    p95: float | None
    stdev: float | None


def summarize(values: Sequence[float | None]) -> Summary:
    data = [v for v in values if v is not None]
    return Summary(
        n=len(data),
        mean=statistics.fmean(data) if data else None,
        p50=percentile(data, 50),
        p95=percentile(data, 95),
        stdev=statistics.stdev(data) if len(data) > 1 else None,
    )


def bootstrap_ci(values: Sequence[float], stat=median, *, n_boot: int = 2000,
                 level: float = 0.95, seed: int = 0) -> tuple[float, float] | None:
    """Percentile bootstrap CI of `stat` over `values` (None with fewer than 2 values)."""
    if len(values) < 2:
        return None
    rng = random.Random(seed)
    boots = sorted(stat([rng.choice(values) for _ in values]) for _ in range(n_boot))
    lo = boots[int((1 - level) / 2 * n_boot)]
    hi = boots[min(n_boot - 1, int((1 + level) / 2 * n_boot))]
    return lo, hi

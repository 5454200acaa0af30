"""Statistics over benchmark results: summaries, bootstrap CIs, comparisons and verdicts.

A difference is called only when its 95% bootstrap confidence interval excludes zero;
otherwise the verdict is "no detectable difference" (MEASUREMENT.md).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from playground.core.metrics import Summary, bootstrap_ci, median, summarize

METRICS = {
    "ttft_ms": "TTFT",
    "ttfa_ms": "TTFA",
    "visible_wait_ms": "first visible character",
    "e2e_ms": "E2E",
    "tpot_ms": "TPOT",
    "first_chunk_ms": "first SSE chunk (vllm bench serve's TTFT)",
}


@dataclass(frozen=True)
class MetricSummary:
    summary: Summary
    median_ci: tuple[float, float] | None


def describe(values: Sequence[float | None], *, seed: int = 0) -> MetricSummary:
    data = [v for v in values if v is not None]
    return MetricSummary(summarize(data), bootstrap_ci(data, seed=seed))


@dataclass(frozen=True)
class Comparison:
    metric: str
    baseline: str
    variant: str
    n_baseline: int
    n_variant: int
    diff_ms: float | None  # median(variant) - median(baseline); negative = variant faster
    diff_ci: tuple[float, float] | None
    speedup: float | None  # median(baseline) / median(variant)
    speedup_ci: tuple[float, float] | None
    verdict: str


def compare_medians(baseline: Sequence[float], variant: Sequence[float], *, metric: str,
                    names: tuple[str, str], n_boot: int = 2000, seed: int = 0) -> Comparison:
    """Bootstrap (each group resampled on its own) the difference and ratio of medians."""
    b = [v for v in baseline if v is not None]
    c = [v for v in variant if v is not None]
    label = METRICS.get(metric, metric)
    if len(b) < 2 or len(c) < 2:
        return Comparison(metric, names[0], names[1], len(b), len(c), None, None, None, None,
                          f"{label}: not enough data (n={len(b)} vs {len(c)})")
    mb, mc = median(b), median(c)
    assert mb is not None and mc is not None
    rng = random.Random(seed)
    diffs, ratios = [], []
    for _ in range(n_boot):
        bb = median([rng.choice(b) for _ in b])
        cc = median([rng.choice(c) for _ in c])
        assert bb is not None and cc is not None
        diffs.append(cc - bb)
        if cc > 0:
            ratios.append(bb / cc)
    diffs.sort()
    ratios.sort()
    diff_ci = (diffs[int(0.025 * n_boot)], diffs[min(n_boot - 1, int(0.975 * n_boot))])
    sp_ci = ((ratios[int(0.025 * len(ratios))], ratios[min(len(ratios) - 1,
             int(0.975 * len(ratios)))]) if ratios else None)
    diff = mc - mb
    speedup = mb / mc if mc > 0 else None
    return Comparison(metric, names[0], names[1], len(b), len(c), diff, diff_ci, speedup,
                      sp_ci, verdict(label, names, diff, diff_ci, speedup))


def verdict(label: str, names: tuple[str, str], diff: float,
            ci: tuple[float, float], speedup: float | None) -> str:
    base, other = names
    lo, hi = ci
    if lo <= 0 <= hi:
        return (f"{label}: no detectable difference between {other} and {base} "
                f"(median diff {diff:+.0f} ms, 95% CI {lo:+.0f} to {hi:+.0f})")
    faster = diff < 0
    amount = abs(diff)
    a, b = sorted((abs(lo), abs(hi)))
    times = f", {speedup:.2f}x" if speedup is not None else ""
    word = "faster" if faster else "slower"
    return (f"{label}: {other} is {amount:.0f} ms {word} than {base} "
            f"(95% CI {a:.0f}-{b:.0f} ms{times})")

"""The one analysis layer: percentiles, summaries, ONE bootstrap, ONE comparison, ONE verdict.

Every number a view shows about many requests comes from here, so the Benchmark tab, the CLI,
the claims board and the GPU sweep cannot disagree on what "p50" or "confirmed" means.

- Percentiles interpolate linearly between order statistics (numpy's default; vllm bench serve
  and GuideLLM use the same convention), everywhere -- summaries, comparisons and the sweep.
- The bootstrap (one sample's median CI in summaries) resamples `n_boot` x n indices at once.
- Comparisons (lab/calls) use a permutation test, not the bootstrap: the percentile bootstrap
  of two medians calls a difference between identical distributions in 37% of tries at n=2
  per side and 8% at n=3. A permutation test is exact at every n.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from playground.core.estimates import Interval, Summary

Stat = Literal["median", "mean"]

N_BOOT = 2000
LEVEL = 0.95
MIN_N = 2  # fewer observations: no interval


def clean(values: Sequence[float | None]) -> list[float]:
    """The observed values (None = not observed, never a fake 0)."""
    return [float(v) for v in values if v is not None]


def percentile(values: Sequence[float | None], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no data."""
    data = clean(values)
    return float(np.percentile(data, q)) if data else None


def median(values: Sequence[float | None]) -> float | None:
    return percentile(values, 50)


def summarize(values: Sequence[float | None], *, seed: int = 0) -> Summary:
    data = clean(values)
    if not data:
        return Summary(0, None, None, None, None, None, None)
    arr = np.asarray(data)
    p50, p95, p99 = (float(x) for x in np.percentile(arr, [50, 95, 99]))
    return Summary(len(data), float(arr.mean()), p50, p95, p99,
                   float(arr.std(ddof=1)) if len(data) > 1 else None,
                   bootstrap_ci(data, seed=seed))


_STATS: dict[Stat, Callable[..., np.ndarray]] = {"median": np.median, "mean": np.mean}


def resample(values: Sequence[float], stat: Stat, *, n_boot: int = N_BOOT,
             rng: np.random.Generator) -> np.ndarray:
    """`n_boot` bootstrap replicates of `stat` over `values` (one vectorised draw)."""
    arr = np.asarray(values, dtype=float)
    idx = rng.integers(0, len(arr), size=(n_boot, len(arr)))
    return _STATS[stat](arr[idx], axis=1)


def interval(replicates: np.ndarray, level: float = LEVEL) -> Interval | None:
    finite = replicates[np.isfinite(replicates)]
    if finite.size == 0:
        return None
    lo, hi = np.percentile(finite, [100 * (1 - level) / 2, 100 * (1 + level) / 2])
    return float(lo), float(hi)


def bootstrap_ci(values: Sequence[float], stat: Stat = "median", *, n_boot: int = N_BOOT,
                 seed: int = 0) -> Interval | None:
    """Percentile bootstrap interval of `stat` (None with fewer than MIN_N values)."""
    if len(values) < MIN_N:
        return None
    return interval(resample(values, stat, n_boot=n_boot, rng=np.random.default_rng(seed)))

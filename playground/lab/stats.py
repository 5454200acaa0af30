"""The one analysis layer: percentiles, summaries, ONE bootstrap, ONE comparison, ONE verdict.

Every number a view shows about many requests comes from here, so the Benchmark tab, the CLI,
the claims board and the GPU sweep cannot disagree on what "p50" or "confirmed" means.

- Percentiles interpolate linearly between order statistics (numpy's default; vllm bench serve
  and GuideLLM use the same convention), everywhere -- summaries, comparisons and the sweep.
- The bootstrap resamples each group on its own (`n_boot` x n index draws at once, vectorised),
  and takes percentile intervals of the statistic.
- `compare` computes, from the same resamples, the difference, the ratio and the relative change
  of medians (times) or the difference of means in percentage points (rates).
- `call` is the only decision rule: a change is called only when its 95% interval excludes 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Stat = Literal["median", "mean"]
Kind = Literal["time", "rate"]
Call = Literal["lower", "higher", "none", "not measurable"]
Interval = tuple[float, float]

N_BOOT = 2000
LEVEL = 0.95
MIN_N = 2  # fewer observations on a side: not measurable


def clean(values: Sequence[float | None]) -> list[float]:
    """The observed values (None = not observed, never a fake 0)."""
    return [float(v) for v in values if v is not None]


def percentile(values: Sequence[float | None], q: float) -> float | None:
    """Linear-interpolated percentile (q in 0..100); None for no data."""
    data = clean(values)
    return float(np.percentile(data, q)) if data else None


def median(values: Sequence[float | None]) -> float | None:
    return percentile(values, 50)


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    stdev: float | None
    median_ci: Interval | None


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


@dataclass(frozen=True)
class Effect:
    """Variant vs baseline. Times: medians (ms), `change` in % of the baseline's median, `diff`
    in ms. Rates (0..1 per request): means shown in %, `change` = `diff` in percentage points."""

    kind: Kind
    n_baseline: int
    n_variant: int
    baseline: float | None
    variant: float | None
    diff: float | None
    diff_ci: Interval | None
    change: float | None
    change_ci: Interval | None
    ratio: float | None  # baseline / variant (a speed-up for times)
    ratio_ci: Interval | None

    @property
    def measurable(self) -> bool:
        return self.diff_ci is not None

    @property
    def unit(self) -> str:
        return "pp" if self.kind == "rate" else "%"


def compare(baseline: Sequence[float | None], variant: Sequence[float | None], *,
            kind: Kind = "time", n_boot: int = N_BOOT, seed: int = 0) -> Effect:
    """The one comparison: point estimates and bootstrap intervals from the same replicates."""
    b, v = clean(baseline), clean(variant)
    if len(b) < MIN_N or len(v) < MIN_N:
        return Effect(kind, len(b), len(v), None, None, None, None, None, None, None, None)
    rng = np.random.default_rng(seed)
    if kind == "rate":
        bb, vv = resample(b, "mean", n_boot=n_boot, rng=rng), resample(v, "mean",
                                                                        n_boot=n_boot, rng=rng)
        mb, mv = 100 * float(np.mean(b)), 100 * float(np.mean(v))
        diffs = 100 * (vv - bb)
        return Effect(kind, len(b), len(v), mb, mv, mv - mb, interval(diffs), mv - mb,
                      interval(diffs), None, None)
    bb, vv = resample(b, "median", n_boot=n_boot, rng=rng), resample(v, "median",
                                                                      n_boot=n_boot, rng=rng)
    mb, mv = float(np.median(b)), float(np.median(v))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(bb > 0, 100 * (vv / bb - 1), np.nan)
        ratio = np.where(vv > 0, bb / vv, np.nan)
    return Effect(kind, len(b), len(v), mb, mv, mv - mb, interval(vv - bb),
                  100 * (mv / mb - 1) if mb > 0 else None, interval(rel),
                  mb / mv if mv > 0 else None, interval(ratio))


def call(effect: Effect) -> Call:
    """The one decision rule: which way the variant moved, when its interval excludes zero."""
    if effect.diff_ci is None or effect.diff is None:
        return "not measurable"
    lo, hi = effect.diff_ci
    if lo <= 0 <= hi:
        return "none"
    return "lower" if hi < 0 else "higher"

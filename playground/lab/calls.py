"""The one comparison of two samples and the one decision rule, calibrated at every sample size.

- Test: a two-sided permutation test of "both samples come from one distribution". The
  statistic is the difference of medians of log values for times (the scale of the relative
  change we report) and the difference of means for rates. Every split is enumerated when there
  are at most EXACT_MAX of them (an exact p); otherwise N_PERM random splits give
  p = (1 + k) / (1 + N_PERM), which is valid at any number of draws. Under identical
  distributions P(p <= alpha) <= alpha at every n (tests/unit/test_calibration.py simulates it).
  The percentile bootstrap this replaces called a difference between identical distributions
  in 37% of tries at n=2 per side and 8% at n=3.
- Too few samples: with 2 vs 2 values no split can reach p <= 0.05 (the best is 1/3); such a
  comparison is "too few samples", never a verdict.
- Intervals: an effect's 95% interval is the set of shifts that the same test does not reject
  (test inversion): on the log scale for the relative change and the ratio, on the linear scale
  for the difference in ms (or percentage points). Unlike the bootstrap's it keeps its coverage
  at small n, and it excludes 0 exactly when the test rejects.
- Many comparisons: `holm` adjusts a family's p-values (Holm-Bonferroni) and `call` decides on
  the adjusted p, so a board of 15 checks has a 5% chance, not ~50%, of any false call.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np

from playground.core.estimates import Call, Effect, Interval, Kind
from playground.lab.stats import clean

ALPHA = 0.05
EXACT_MAX = 4_000  # up to 7 vs 7 values (3,432 splits): every split
N_PERM = 1000  # p >= 1/1001: still far below Holm's 0.05 / 15
_BISECT = 16  # interval edges to ~span / 65,000
Center = Callable[..., np.ndarray]


@functools.lru_cache(maxsize=32)
def _splits(n_a: int, n_b: int) -> tuple[np.ndarray, np.ndarray, bool]:
    """Index arrays (K, n_a) and (K, n_b) of the splits considered, and whether all are."""
    n = n_a + n_b
    if math.comb(n, n_a) <= EXACT_MAX:
        first = np.array(list(itertools.combinations(range(n), n_a)), dtype=np.intp)
        mask = np.ones((len(first), n), dtype=bool)
        mask[np.arange(len(first))[:, None], first] = False
        return first, np.nonzero(mask)[1].reshape(len(first), n_b), True
    rng = np.random.default_rng(n * 7919 + n_a)  # fixed: the same data, the same p
    perm = np.argsort(rng.random((N_PERM, n)), axis=1)
    return perm[:, :n_a], perm[:, n_a:], False


def _p(a: np.ndarray, b: np.ndarray, center: Center) -> float:
    """Two-sided permutation p-value of center(b) - center(a)."""
    first, second, exact = _splits(len(a), len(b))
    pooled = np.concatenate([a, b])
    observed = float(center(b) - center(a))
    stats = center(pooled[second], axis=1) - center(pooled[first], axis=1)
    tol = 1e-9 * max(1.0, abs(observed))  # the same statistic up to float noise counts as equal
    k = int(np.count_nonzero(np.abs(stats) >= abs(observed) - tol))
    return k / len(stats) if exact else (k + 1) / (len(stats) + 1)


@functools.lru_cache(maxsize=256)
def min_p(n_a: int, n_b: int, kind: Kind = "time") -> float:
    """The smallest p-value any data of these sizes can reach (completely separated samples)."""
    center = np.mean if kind == "rate" else np.median
    return _p(np.arange(n_a, dtype=float), np.arange(n_a, n_a + n_b, dtype=float), center)


def _shift_interval(a: np.ndarray, b: np.ndarray, center: Center, alpha: float
                    ) -> Interval | None:
    """Shifts d for which the test of (a, b - d) is not rejected; None if none is rejected."""
    est = float(center(b) - center(a))
    span = float(max(a.max(), b.max()) - min(a.min(), b.min())) or 1.0
    far = abs(est) + 2 * span + 1.0  # b - (est +- far) lies wholly beyond a: complete separation

    def accepted(d: float) -> bool:
        return _p(a, b - d, center) > alpha

    return invert(accepted, est, far)


def invert(accepted: Callable[[float], bool], est: float, far: float, steps: int = _BISECT
           ) -> Interval | None:
    """Test inversion: the shifts d around the estimate `est` (where the test accepts) that
    `accepted` keeps, each edge found by bisection; None when even est +- far is accepted (no
    data of this size rejects anything)."""
    if accepted(est + far) or accepted(est - far):
        return None

    def edge(outside: float) -> float:
        inside = est  # p = 1 at the estimate itself
        for _ in range(steps):
            mid = (inside + outside) / 2
            if accepted(mid):
                inside = mid
            else:
                outside = mid
        return (inside + outside) / 2

    return edge(est - far), edge(est + far)


def _empty(kind: Kind, n_b: int, n_v: int) -> Effect:
    return Effect(kind, n_b, n_v, None, None, None, None, None, None, None, None)


def compare(baseline: Sequence[float | None], variant: Sequence[float | None], *,
            kind: Kind = "time", alpha: float = ALPHA, intervals: bool = True) -> Effect:
    """The one comparison: point estimates, the test's p-value and the inverted intervals
    (`intervals=False`: the test alone, for simulations)."""
    b, v = np.asarray(clean(baseline)), np.asarray(clean(variant))
    if len(b) < 2 or len(v) < 2:
        return _empty(kind, len(b), len(v))
    floor = min_p(len(b), len(v), kind)

    def interval(x: np.ndarray, y: np.ndarray, center: Center) -> Interval | None:
        return _shift_interval(x, y, center, alpha) if intervals else None

    if kind == "rate":
        mb, mv = 100 * float(b.mean()), 100 * float(v.mean())
        ci = interval(b, v, np.mean)
        pp = None if ci is None else (100 * ci[0], 100 * ci[1])
        return Effect(kind, len(b), len(v), mb, mv, mv - mb, pp, mv - mb, pp, None, None,
                      _p(b, v, np.mean), floor)
    mb, mv = float(np.median(b)), float(np.median(v))
    diff_ci = interval(b, v, np.median)
    if (b > 0).all() and (v > 0).all():
        lb, lv = np.log(b), np.log(v)
        p = _p(lb, lv, np.median)
        log_ci = interval(lb, lv, np.median)
        change_ci = None if log_ci is None else (100 * math.expm1(log_ci[0]),
                                                 100 * math.expm1(log_ci[1]))
        ratio_ci = None if log_ci is None else (math.exp(-log_ci[1]), math.exp(-log_ci[0]))
    else:  # a zero or negative time: the linear scale throughout
        p = _p(b, v, np.median)
        change_ci = None if diff_ci is None or mb <= 0 else (100 * diff_ci[0] / mb,
                                                            100 * diff_ci[1] / mb)
        ratio_ci = None
    return Effect(kind, len(b), len(v), mb, mv, mv - mb, diff_ci,
                  100 * (mv / mb - 1) if mb > 0 else None, change_ci,
                  mb / mv if mv > 0 else None, ratio_ci, p, floor)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni adjusted p-values of one family (None = not tested, not counted)."""
    tested = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(tested)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(tested):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def call(effect: Effect, p_adjusted: float | None = None, alpha: float = ALPHA) -> Call:
    """The one decision rule: which way the variant moved, when the (family-adjusted) p-value
    is at most alpha; "too few samples" when no data of these sizes could get there."""
    if effect.p_value is None or effect.diff is None:
        return "not measurable"
    if effect.min_p is not None and effect.min_p > alpha:
        return "too few samples"
    p = effect.p_value if p_adjusted is None else p_adjusted
    if p > alpha or effect.diff == 0:
        return "none"
    return "lower" if effect.diff < 0 else "higher"


@functools.lru_cache(maxsize=8)
def least_n(alpha: float = ALPHA, kind: Kind = "time") -> int | None:
    """The fewest samples per side with which any data can be called at `alpha` (completely
    separated samples; a family of several comparisons needs more: Holm); None past 60."""
    return next((n for n in range(2, 61) if min_p(n, n, kind) <= alpha), None)


def too_few_text(effect: Effect, alpha: float = ALPHA) -> str:
    least = least_n(alpha, effect.kind)
    need = (f"; a call needs at least {least} per side, more when several comparisons share "
            "the run" if least else "")
    return (f"too few samples (n={effect.n_baseline} vs {effect.n_variant}: the best p-value "
            f"any such data can reach is {effect.min_p:.2f} > {alpha}{need})")

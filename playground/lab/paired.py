"""Paired, interleaved blocks: one reader against a reference, block by block, judged against a
tolerance (e.g. "within 5%") only as far as the blocks can resolve it.

Block i of both readers ran back to back (benchmarks/fidelity.py rotates their order), so the
unit is the pair: x_i = log(reader_i / reference_i). The test is the sign-flip permutation test
of "the mean of x is d" (exact over all 2^k sign patterns up to EXACT_K pairs, random ones
beyond, like lab/calls), and the ratio's 95% interval is the set of exp(d) it does not reject
(test inversion, the same rule as lab/calls). With k pairs no data can reach p <= 0.05 below
k = 6 (the best p is 2 / 2^k): fewer pairs resolve nothing, and the verdict says so.

Verdicts, for a two-sided tolerance t (a one-sided "at least 1 - t" for throughput):
- "within 5%" only when the whole interval lies inside [1 - t, 1 + t];
- "outside 5%" only when it lies wholly outside;
- otherwise "not resolved at this n", with the number of pairs that would resolve it at the
  observed pair-to-pair spread (a normal approximation: a planning figure, not a promise).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from playground.lab.calls import invert
from playground.lab.stats import Interval

ALPHA = 0.05
EXACT_K = 14  # 16,384 sign patterns
N_FLIPS = 4000
_BISECT = 24


@dataclass(frozen=True)
class PairedRatio:
    n_pairs: int
    ratio: float | None  # exp(mean log ratio): reader / reference
    ci: Interval | None  # 95%; None when no ratio is rejected (too few pairs)
    p_value: float | None  # H0: ratio 1
    min_p: float | None  # the best p any data of this many pairs can reach


def _signs(k: int) -> np.ndarray:
    if k <= EXACT_K:
        return np.array(list(itertools.product((1.0, -1.0), repeat=k)))
    rng = np.random.default_rng(k * 7919)  # fixed: the same data, the same p
    return rng.choice((1.0, -1.0), size=(N_FLIPS, k))


def _p(x: np.ndarray, signs: np.ndarray, exact: bool) -> float:
    observed = abs(float(x.mean()))
    stats = np.abs(signs @ x) / len(x)
    tol = 1e-12 * max(1.0, observed)
    hits = int(np.count_nonzero(stats >= observed - tol))
    return hits / len(stats) if exact else (hits + 1) / (len(stats) + 1)


def min_p(k: int) -> float:
    """The best p-value k pairs can reach (every pair on the same side)."""
    return 2 / 2**k if k <= EXACT_K else 1 / (N_FLIPS + 1)


def least_pairs(alpha: float = ALPHA) -> int:
    return next(k for k in range(1, 64) if min_p(k) <= alpha)


def _log_ratios(reference: Sequence[float | None], reader: Sequence[float | None]
                ) -> np.ndarray:
    """log(reader_i / reference_i) of the pairs with both values present and positive."""
    return np.log(np.array([b / a for a, b in zip(reference, reader, strict=False)
                            if a is not None and b is not None and a > 0 and b > 0]))


def paired_ratio(reference: Sequence[float | None], reader: Sequence[float | None],
                 alpha: float = ALPHA) -> PairedRatio:
    """Pairs (reference_i, reader_i) with both values present and positive."""
    x = _log_ratios(reference, reader)
    k = len(x)
    if k < 2:
        return PairedRatio(k, None, None, None, None)
    signs, exact = _signs(k), k <= EXACT_K
    est = float(x.mean())
    span = float(x.max() - x.min()) or 1.0
    far = abs(est) + 2 * span + 1.0

    def accepted(d: float) -> bool:
        return _p(x - d, signs, exact) > alpha

    log_ci = invert(accepted, est, far, _BISECT)
    ci = None if log_ci is None else (math.exp(log_ci[0]), math.exp(log_ci[1]))
    return PairedRatio(k, math.exp(est), ci, _p(x, signs, exact), min_p(k))


def pairs_needed(reference: Sequence[float | None], reader: Sequence[float | None],
                 tolerance: float, one_sided: bool = False) -> int | None:
    """About how many pairs would put the interval on one side of the tolerance's edge at the
    observed spread; None when the ratio sits on the edge (no n resolves it) or no spread."""
    x = _log_ratios(reference, reader)
    if len(x) < 2:
        return None
    mean, sd = float(np.mean(x)), float(np.std(x, ddof=1))
    edges = [math.log(1 - tolerance)] + ([] if one_sided else [math.log(1 + tolerance)])
    margin = min(abs(mean - e) for e in edges)
    if margin < 1e-9:
        return None
    return max(least_pairs(), math.ceil((2.0 * sd / margin) ** 2))


MANY = 1000  # past this many pairs, "~N pairs" is no plan anyone runs: said as "more than"


def judge(p: PairedRatio, tolerance: float, *, one_sided: bool = False,
          needed: int | None = None) -> str:
    """One of "within N%", "outside N%" or "not resolved at this n (...)"."""
    pct = f"{100 * tolerance:.0f}%"
    if p.ratio is None:
        return "no data"
    lo_ok, hi_ok = 1 - tolerance, 1 + tolerance
    if p.ci is not None:
        lo, hi = p.ci
        if lo >= lo_ok and (one_sided or hi <= hi_ok):
            return f"within {pct}"
        if hi < lo_ok or (not one_sided and lo > hi_ok):
            return f"outside {pct}"
    why = (f"{p.n_pairs} pairs of blocks: no interval below {least_pairs()}" if p.ci is None
           else f"interval {p.ci[0]:.2f}-{p.ci[1]:.2f} over {p.n_pairs} pairs of blocks")
    if not needed:
        more = "; the ratio sits on the edge: no n resolves it"
    elif needed > MANY:
        more = f"; more than {MANY:,} pairs at this spread: the ratio sits near the edge"
    else:
        more = f"; ~{needed} pairs would resolve it at this spread"
    return f"not resolved at this n ({why}{more})"


__all__ = ["PairedRatio", "judge", "least_pairs", "min_p", "paired_ratio", "pairs_needed"]

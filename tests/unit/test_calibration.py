"""The decision rule is calibrated: two identical distributions are called different in at most
5% of tries at every sample size the tool accepts, a board of checks has at most a 5% chance of
any false call (Holm) -- and the simulation is sharp enough to catch the rule it replaced."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from playground.lab.calls import ALPHA, EXACT_MAX, N_PERM, Kind, call, compare, holm, min_p

TRIALS = 300
# Binomial noise of a rate estimated from TRIALS tries at a true 5%: two standard errors.
NOISE = 2 * math.sqrt(ALPHA * (1 - ALPHA) / TRIALS)
# Every n per side up to where the test leaves exact enumeration and well past it, the
# claims' and benchmarks' usual sizes, and unequal sides (failed requests drop out).
SIZES = [(n, n) for n in range(2, 21)] + [(30, 30), (50, 50), (100, 100),
                                          (2, 5), (3, 8), (5, 12), (8, 20), (12, 40)]


def draw(rng: np.random.Generator, n: int, kind: Kind) -> list[float]:
    if kind == "rate":  # per-request 0/1 (valid JSON, a field right): heavy ties
        return [float(x) for x in rng.random(n) < 0.7]
    return list(1000 * rng.lognormal(0.0, 0.3, n))  # latencies: skewed, continuous


def false_call_rate(n_a: int, n_b: int, kind: Kind, seed: int) -> float:
    rng = np.random.default_rng(seed)
    calls = 0
    for _ in range(TRIALS):
        e = compare(draw(rng, n_a, kind), draw(rng, n_b, kind), kind=kind, intervals=False)
        calls += call(e) in ("lower", "higher")
    return calls / TRIALS


@pytest.mark.parametrize("kind", ["time", "rate"])
def test_identical_distributions_are_rarely_called_different_at_every_size(kind: Kind) -> None:
    rates = {sizes: false_call_rate(*sizes, kind, seed=i) for i, sizes in enumerate(SIZES)}
    worst = max(rates, key=rates.__getitem__)
    assert rates[worst] <= ALPHA + NOISE, f"{kind}: {rates}"
    pooled = sum(rates.values()) / len(rates)  # ~8,000 tries: noise ~0.25 pp
    assert pooled <= ALPHA, f"{kind}: pooled false-call rate {pooled:.3f}; {rates}"


@pytest.mark.parametrize("n", range(2, 8))
def test_the_exact_test_rejects_at_most_alpha_of_the_splits(n: int) -> None:
    """Where every split is enumerated the size is computed, not simulated: for any pooled data,
    identical distributions make every split of it equally likely, so the false-call rate is
    the share of splits the rule calls."""
    assert math.comb(2 * n, n) <= EXACT_MAX
    rng = np.random.default_rng(n)
    pooled = 1000 * rng.lognormal(0.0, 0.3, 2 * n)
    called = 0
    splits = list(itertools.combinations(range(2 * n), n))
    for first in splits:
        a = [pooled[i] for i in first]
        b = [pooled[i] for i in range(2 * n) if i not in first]
        called += call(compare(a, b, intervals=False)) in ("lower", "higher")
    assert called / len(splits) <= ALPHA


def test_too_few_samples_below_the_size_where_a_call_is_possible() -> None:
    for n in (2, 3, 4):  # no split of 4, 6 or 8 values reaches p <= 0.05 for medians
        assert min_p(n, n) > ALPHA
        e = compare([100.0 + i for i in range(n)], [900.0 + i for i in range(n)])
        assert call(e) == "too few samples" and e.change_ci is None
    e = compare([100.0 + i for i in range(5)], [900.0 + i for i in range(5)])
    assert min_p(5, 5) <= ALPHA and call(e) == "higher" and e.change_ci is not None
    assert call(compare([100.0], [900.0])) == "not measurable"


def old_bootstrap_rule(a: list[float], b: list[float], rng: np.random.Generator) -> bool:
    """The rule this replaced: percentile bootstrap of the relative change of medians."""
    x, y = np.asarray(a), np.asarray(b)
    bx = np.median(x[rng.integers(0, len(x), (2000, len(x)))], axis=1)
    by = np.median(y[rng.integers(0, len(y), (2000, len(y)))], axis=1)
    lo, hi = np.percentile(100 * (by / bx - 1), [2.5, 97.5])
    return bool(lo > 0 or hi < 0)


def test_the_simulation_catches_the_rule_it_replaced() -> None:
    rng = np.random.default_rng(0)
    calls = sum(old_bootstrap_rule(draw(rng, 2, "time"), draw(rng, 2, "time"), rng)
                for _ in range(TRIALS))
    assert calls / TRIALS > 0.2  # the issue measured 37%


def test_holm_keeps_a_board_of_fifteen_checks_at_five_percent() -> None:
    rng = np.random.default_rng(3)
    boards, any_raw, any_holm = 200, 0, 0
    for _ in range(boards):
        effects = [compare(draw(rng, 8, "time"), draw(rng, 8, "time"), intervals=False)
                   for _ in range(15)]
        ps = [e.p_value for e in effects]
        any_raw += any(call(e) in ("lower", "higher") for e in effects)
        adjusted = holm(ps)
        any_holm += any(call(e, p) in ("lower", "higher")
                        for e, p in zip(effects, adjusted, strict=True))
    assert any_holm / boards <= ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / boards)
    assert any_raw / boards > 0.2  # uncorrected, ~1 - 0.95^15 of boards have a false call


def test_holm_adjustment_by_hand() -> None:
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert holm([]) == []


def test_monte_carlo_p_values_are_never_zero() -> None:
    e = compare([float(i) for i in range(1, 41)], [float(i) for i in range(101, 141)])
    assert e.p_value == pytest.approx(1 / (N_PERM + 1))

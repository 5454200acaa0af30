"""PURE: how big our effect is next to the article's number, in the article's own unit.

A check's claimed number is one of: a relative change (%), a difference in ms per request, a
factor (x), a before -> after pair (judged as the relative change it implies: absolute times
belong to the article's hardware), or percentage points for rates. Ours is put in the same unit
with its 95% interval, and the answer is one of:

- "consistent with the claim": the claimed value lies inside our interval;
- "smaller than claimed" / "larger than claimed": it lies outside, on that side of ours
  (measured from "no effect": 0, or 1 for a factor);
- "direction only": the article gives no number; only the direction is judged;
- "not judged": we have no interval (too few samples, or not measured).
"""

from __future__ import annotations

from dataclasses import dataclass

from playground.lab.calls import Effect
from playground.lab.stats import Interval
from playground.specs.claims import Check

CONSISTENT = "consistent with the claim"
SMALLER = "smaller than claimed"
LARGER = "larger than claimed"
DIRECTION_ONLY = "direction only: the article gives no number"
NOT_JUDGED = "not judged"


@dataclass(frozen=True)
class Magnitude:
    outcome: str  # one of the constants above
    ours: str  # our value and interval in the claim's unit
    claimed: str  # the article's value in the same unit
    claimed_change_pct: float | None  # the claim as a relative change (for plots)


def _pct(x: float) -> str:
    return f"{x:+.0f}%"


def _outcome(claimed: float, ci: Interval, null: float) -> str:
    lo, hi = ci
    if lo <= claimed <= hi:
        return CONSISTENT
    above = claimed > hi  # the claim lies above our whole interval
    claims_increase = claimed > null
    return SMALLER if above == claims_increase else LARGER


def _in_unit(check: Check, e: Effect, tokens: float | None
             ) -> tuple[float, Interval | None, float, str, str] | None:
    """(our value, our CI, the claim, the null, unit formatter) in the claim's unit."""
    if check.claimed_diff_ms is not None and e.diff is not None:
        scale = (tokens or 0) if check.per_request else 1.0
        ci = None if e.diff_ci is None or not scale else (e.diff_ci[0] * scale,
                                                          e.diff_ci[1] * scale)
        return e.diff * scale, ci, check.claimed_diff_ms, 0.0, "ms"
    if check.claimed_factor is not None and e.change is not None:
        ci = None if e.change_ci is None else (1 + e.change_ci[0] / 100, 1 + e.change_ci[1] / 100)
        return 1 + e.change / 100, ci, check.claimed_factor, 1.0, "x"
    claimed = check.claimed_change_pct
    if check.claimed_before_after_ms is not None:
        before, after = check.claimed_before_after_ms
        claimed = 100 * (after / before - 1) if before > 0 else None
    if claimed is not None and e.change is not None:
        return e.change, e.change_ci, claimed, 0.0, e.unit
    return None


def _fmt(value: float, unit: str) -> str:
    if unit == "x":
        return f"{value:.2f}x"
    if unit == "ms":
        return f"{value:+,.1f} ms" if abs(value) < 10 else f"{value:+,.0f} ms"
    if unit == "pp":
        return f"{value:+.0f} pp"
    return _pct(value)


def judge_magnitude(check: Check, e: Effect, tokens: float | None = None) -> Magnitude:
    """Our effect next to the claim's number (tokens: the variant's decoded tokens, for a
    per-token cost turned into a per-request one)."""
    pct = check.claimed_change_pct
    if check.claimed_before_after_ms is not None:
        before, after = check.claimed_before_after_ms
        pct = 100 * (after / before - 1) if before > 0 else None
    elif check.claimed_factor is not None:
        pct = 100 * (check.claimed_factor - 1)
    got = _in_unit(check, e, tokens)
    if got is None:
        outcome = DIRECTION_ONLY if pct is None and check.claimed_diff_ms is None else NOT_JUDGED
        return Magnitude(outcome, "", check.claimed, pct)
    ours, ci, claimed, null, unit = got
    claimed_text = _fmt(claimed, unit)
    if check.claimed_before_after_ms is not None:
        before, after = check.claimed_before_after_ms
        claimed_text = f"{before:,.0f} -> {after:,.0f} ms, {claimed_text}"
    ours_text = _fmt(ours, unit)
    if check.per_request and tokens:
        ours_text = (f"{_fmt(ours / tokens, unit)}/token x {tokens:.0f} tokens = {ours_text} "
                     "per request")
    if ci is None:
        return Magnitude(NOT_JUDGED, ours_text, claimed_text, pct)
    ours_text += f" [95% CI {_fmt(ci[0], unit)}, {_fmt(ci[1], unit)}]"
    return Magnitude(_outcome(claimed, ci, null), ours_text, claimed_text, pct)

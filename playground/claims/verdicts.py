"""A claim's checks judged from a run's typed records, with lab/calls' one test and rule.

- confirmed / refuted: the effect goes the claimed way / the other way, and the permutation
  test's p-value, Holm-adjusted over every judged check of the board, is at most 0.05;
- no detectable difference: it is not;
- too few samples: no data of these sizes could reach p <= 0.05 (2 vs 2 values, 3 vs 3, ...);
- not measurable: fewer than two observations on a side (the reason is stated);
- not measurable on the demo model: the random-weight model decides the outcome (claims/honesty).

Next to the direction, the size: our change in the article's unit with its 95% interval, and
whether the article's number is consistent with it, smaller or larger (claims/magnitude).
`judge_claim` decides with the claim's own p-values; `adjust` re-decides a whole board's checks
with Holm's adjusted ones and rewrites every text. A claim of several parts is confirmed only
when every part holds, direction and size (`claim_verdict`); otherwise it is "partly: ...".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from playground.claims.honesty import DEMO_PREFIX, demo_reason
from playground.claims.magnitude import (
    DIRECTION_ONLY,
    LARGER,
    NOT_JUDGED,
    SMALLER,
    Magnitude,
    judge_magnitude,
)
from playground.core.record import RequestRecord, values
from playground.lab.calls import ALPHA, Effect, call, compare, holm, too_few_text
from playground.lab.stats import Interval, median
from playground.lab.store import BatchRecord, Run
from playground.outputs.fmt import ms
from playground.specs.claims import LATENCY, RATES, Check, Claim, Verdict

HOLM_POLICY = ("Holm-Bonferroni over every judged check of the board: the chance of any false "
               f"confirmed/refuted on the board is at most {ALPHA:.0%}")


@dataclass(frozen=True)
class CheckResult:
    metric: str
    label: str
    direction: str
    claimed: str
    claimed_change_pct: float | None  # the claim as a relative change (plots)
    unit: str  # "%" (relative change of medians) or "pp" (percentage points)
    n_baseline: int
    n_variant: int
    baseline_value: float | None  # median (times, ms) or mean (rates, %)
    variant_value: float | None
    change: float | None  # % or pp
    change_ci: Interval | None
    verdict: Verdict
    text: str
    values_baseline: list[float] = field(default_factory=list)  # the samples (for plots)
    values_variant: list[float] = field(default_factory=list)
    p_value: float | None = None
    p_adjusted: float | None = None
    min_p: float | None = None
    magnitude: str = ""  # claims/magnitude's outcome
    ours_in_claim_unit: str = ""
    claimed_in_unit: str = ""
    reason: str = ""  # why there is no verdict
    names: tuple[str, str] = ("baseline", "variant")


def check_from_dict(data: dict[str, Any]) -> CheckResult:
    """A check read back from a board document (JSON lists back to tuples)."""
    fields = {**data, "names": tuple(data.get("names") or ("baseline", "variant"))}
    if fields.get("change_ci") is not None:
        fields["change_ci"] = tuple(fields["change_ci"])
    known = CheckResult.__dataclass_fields__
    return CheckResult(**{k: v for k, v in fields.items() if k in known})


def _direction_verdict(direction: str, decided: str) -> Verdict:
    if decided in ("not measurable", "too few samples"):
        return decided  # type: ignore[return-value]
    if direction == "report":
        return "reported"
    if decided == "none":
        return "no detectable difference"
    return "confirmed" if decided == direction else "refuted"


def _ours(r: CheckResult) -> str:
    assert r.baseline_value is not None and r.variant_value is not None
    ci = ""
    if r.change_ci is not None:
        ci = f", 95% CI {r.change_ci[0]:+.0f} to {r.change_ci[1]:+.0f}{r.unit}"
    if r.unit == "pp":
        return f"{r.baseline_value:.0f}% -> {r.variant_value:.0f}% ({r.change:+.0f} pp{ci})"
    pct = "n/a" if r.change is None else f"{r.change:+.0f}%"
    return f"{ms(r.baseline_value)} -> {ms(r.variant_value)} median ({pct}{ci})"


def _p_text(r: CheckResult) -> str:
    if r.p_value is None:
        return ""
    adj = "" if r.p_adjusted is None or r.p_adjusted == r.p_value else (
        f", Holm-adjusted {r.p_adjusted:.2g}")
    return f"; p={r.p_value:.2g}{adj}"


def describe(r: CheckResult) -> str:
    """The check in words: direction verdict, our numbers, and the size next to the claim."""
    who = "" if r.direction == "report" else f" {r.names[0]} -> {r.names[1]}"
    if r.verdict == "not measurable":
        return f"{r.label}: not enough observations (n={r.n_baseline} vs {r.n_variant})" + (
            f" ({r.reason})" if r.reason else "")
    if r.verdict == "not measurable on the demo model":
        return f"{r.label}{who}: {DEMO_PREFIX}: {r.reason}"
    ours = f"{r.label}{who}: {_ours(r)}{_p_text(r)}"
    if r.verdict == "too few samples":
        return f"{ours}. {r.reason}"
    if r.direction == "report":
        return ours + (f"; claimed: {r.claimed}" if r.claimed else "")
    head = {"confirmed": "confirmed in direction", "refuted": "refuted in direction"}.get(
        r.verdict, r.verdict)
    size = r.magnitude
    if r.claimed_in_unit and r.ours_in_claim_unit.startswith(f"{r.change:+.0f}{r.unit} ["):
        size += f" ({r.claimed_in_unit} claimed)"  # ours is already in the claim's unit
    elif r.ours_in_claim_unit and r.claimed_in_unit:
        size += f" ({r.ours_in_claim_unit} vs {r.claimed_in_unit} claimed)"
    elif r.claimed and r.magnitude != DIRECTION_ONLY:
        size += f" (claimed: {r.claimed})"
    return f"{ours}. {head}; {size}"


def judge(check: Check, baseline: Sequence[float], variant: Sequence[float], *,
          names: tuple[str, str] = ("baseline", "variant"), why_missing: str = "",
          demo: str = "", tokens: float | None = None) -> CheckResult:
    """Verdict for one check from the two samples (ms for times; 0..1 per request for rates),
    decided on the check's own p-value (`adjust` re-decides a family)."""
    rate = check.metric in RATES
    label = RATES.get(check.metric) or LATENCY[check.metric]
    e = compare(baseline, variant, kind="rate" if rate else "time")
    size = judge_magnitude(check, e, tokens)
    result = CheckResult(
        check.metric, label, check.direction, check.claimed, size.claimed_change_pct, e.unit,
        e.n_baseline, e.n_variant, e.baseline, e.variant, e.change, e.change_ci,
        "not measurable", "", [round(x, 3) for x in baseline if x is not None],
        [round(x, 3) for x in variant if x is not None], e.p_value, e.p_value, e.min_p,
        names=names)
    return _decide(result, e, size, why_missing, demo)


def _decide(r: CheckResult, e: Effect, size: Magnitude, why_missing: str, demo: str
            ) -> CheckResult:
    if demo:
        r = replace(r, verdict="not measurable on the demo model", reason=demo, p_adjusted=None)
    else:
        decided = call(e, r.p_adjusted)
        verdict = _direction_verdict(r.direction, decided)
        reason = too_few_text(e) if decided == "too few samples" else (
            why_missing if decided == "not measurable" else "")
        judged = decided not in ("too few samples", "not measurable")
        r = replace(r, verdict=verdict, reason=reason,
                    magnitude=size.outcome if judged else NOT_JUDGED,
                    ours_in_claim_unit=size.ours, claimed_in_unit=size.claimed)
    return replace(r, text=describe(r))


def judged_p(r: CheckResult) -> float | None:
    """The p-value that enters the board's family (direction checks with a verdict to give)."""
    if r.direction == "report" or r.verdict in ("not measurable", "too few samples",
                                                "not measurable on the demo model"):
        return None
    return r.p_value


def adjust(checks: Sequence[CheckResult]) -> list[CheckResult]:
    """Holm over the family: every judged check re-decided on its adjusted p-value."""
    adjusted = holm([judged_p(r) for r in checks])
    out = []
    for r, p_adj in zip(checks, adjusted, strict=True):
        if p_adj is None:
            out.append(r)
            continue
        decided = "none" if p_adj > ALPHA or not r.change else (
            "lower" if r.change < 0 else "higher")
        r = replace(r, p_adjusted=p_adj, verdict=_direction_verdict(r.direction, decided))
        out.append(replace(r, text=describe(r)))
    return out


def sample(rows: Sequence[RequestRecord], metric: str) -> list[float]:
    """Per-request values of a metric: ms for times, 0/1 (or a fraction) for rates."""
    if metric in RATES:
        out = []
        for r in rows:
            got = getattr(r.score, metric) if r.ok and r.score is not None else None
            if got is not None:
                out.append(float(got))
        return out
    return values(rows, metric)


def missing_reason(rows: Sequence[RequestRecord], metric: str) -> str:
    if not rows:
        return "no finished request"
    failed = sum(not r.ok for r in rows)
    if failed == len(rows):
        first = next(r.error for r in rows if r.error is not None)
        return f"all {failed} requests failed: {first.message[:300]}"
    ok = [r for r in rows if r.ok]
    if metric == "ttfa_ms" and all(not r.content for r in ok):
        return "no answer text arrived: thinking never ended within max_tokens"
    if metric in ("ttft_ms", "ttfa_ms", "tpot_ms") and not any(r.raw.streaming for r in rows):
        return "not observable without streaming"
    if metric in RATES:
        return "no scored answers"
    return ""


def _walls(batches: Sequence[BatchRecord], name: str) -> list[float]:
    return [b.wall_ms for b in batches if b.variant == name and b.phase == "timed"
            and not b.failed]


def _decoded_tokens(rows: Sequence[RequestRecord]) -> float | None:
    """Median decoded tokens after the first (what TPOT is divided by)."""
    got = [r.metrics.completion_tokens - 1 for r in rows
           if r.ok and r.metrics.completion_tokens]
    return median(got)


def judge_claim(claim: Claim, run: Run, base: str, var: str) -> list[CheckResult]:
    """Every check of the claim, decided with Holm over the claim's own checks (a board
    re-decides over all of its checks)."""
    timed = run.timed
    rows_b = [r for r in timed if r.name == base]
    rows_v = [r for r in timed if r.name == var]
    exp = run.meta.experiment
    variants = {v.name: v for v in exp.variants} if exp else {}
    demo = bool(run.meta.demo_model) and base in variants and var in variants
    out = []
    for check in claim.checks:
        if check.metric == "batch_wall_ms":
            b, v, why = _walls(run.batches, base), _walls(run.batches, var), ""
        else:
            b, v = sample(rows_b, check.metric), sample(rows_v, check.metric)
            why = missing_reason(rows_b, check.metric) or missing_reason(rows_v, check.metric)
        reason = demo_reason(check, variants[base], variants[var]) if demo else ""
        out.append(judge(check, b, v, names=(base, var), why_missing=why, demo=reason,
                         tokens=_decoded_tokens(rows_v) if check.per_request else None))
    return adjust(out)


def holds(r: CheckResult) -> bool:
    """One part of a claim holds: its direction is confirmed and the article's number, when
    it gives one, lies inside our interval (or has none to be judged against)."""
    return r.verdict == "confirmed" and r.magnitude not in (SMALLER, LARGER)


def _part(r: CheckResult) -> str:
    if holds(r):
        return f"{r.label} confirmed"
    if r.verdict == "confirmed":  # the direction holds, the article's number does not
        size = f" ({r.ours_in_claim_unit} vs {r.claimed_in_unit} claimed)" if (
            r.ours_in_claim_unit and r.claimed_in_unit) else ""
        return f"{r.label} {r.magnitude}{size}"
    return f"{r.label} {r.verdict}"


def claim_verdict(checks: Sequence[CheckResult]) -> str:
    """The claim's verdict. One judged check: its verdict (the size is shown beside it). A
    compound claim ("costs ~15 ms and always gives valid JSON") is judged part by part:
    "confirmed" only when every part holds (`holds`), "partly: ..." naming each part when
    some of it was confirmed, otherwise the first part's verdict."""
    judged = [c for c in checks if c.direction != "report"]
    if not judged:
        return "reported"
    if len(judged) == 1:
        return judged[0].verdict
    if all(holds(c) for c in judged):
        return "confirmed"
    if any(c.verdict == "confirmed" for c in judged):
        return "partly: " + "; ".join(_part(c) for c in judged)
    return judged[0].verdict

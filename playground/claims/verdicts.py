"""A claim's checks judged from a run's typed records, with lab/stats' one comparison and rule:

- confirmed: the effect goes the claimed way and its 95% bootstrap CI excludes zero;
- refuted: it goes the other way and its CI excludes zero;
- no detectable difference: the CI contains zero;
- not measurable: fewer than two observations on a side (the reason is stated).

Our magnitude (relative change of medians for times, percentage points for rates) is always
reported next to the claimed one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from playground.core.record import RequestRecord, values
from playground.lab.stats import Interval, call, compare
from playground.lab.store import BatchRecord, Run
from playground.specs.claims import LATENCY, RATES, Check, Claim, Verdict


@dataclass(frozen=True)
class CheckResult:
    metric: str
    label: str
    direction: str
    claimed: str
    claimed_change_pct: float | None
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


def _verdict(check: Check, decided: str) -> Verdict:
    if decided == "not measurable":
        return "not measurable"
    if check.direction == "report":
        return "reported"
    if decided == "none":
        return "no detectable difference"
    return "confirmed" if decided == check.direction else "refuted"


def judge(check: Check, baseline: Sequence[float], variant: Sequence[float], *,
          names: tuple[str, str] = ("baseline", "variant"), seed: int = 0,
          why_missing: str = "") -> CheckResult:
    """Verdict for one check from the two samples (ms for times; 0..1 per request for rates)."""
    rate = check.metric in RATES
    label = RATES.get(check.metric) or LATENCY[check.metric]
    e = compare(baseline, variant, kind="rate" if rate else "time", seed=seed)
    verdict = _verdict(check, call(e))
    if verdict == "not measurable":
        why = f" ({why_missing})" if why_missing else ""
        text = f"{label}: not enough observations (n={e.n_baseline} vs {e.n_variant}){why}"
    else:
        assert e.baseline is not None and e.variant is not None and e.change_ci is not None
        lo, hi = e.change_ci
        if rate:
            ours = (f"{e.baseline:.0f}% -> {e.variant:.0f}% ({e.change:+.0f} pp, 95% CI "
                    f"{lo:+.0f} to {hi:+.0f})")
        else:
            pct = "n/a" if e.change is None else f"{e.change:+.0f}%"
            ours = (f"{e.baseline:,.0f} -> {e.variant:,.0f} ms median ({pct}, 95% CI "
                    f"{lo:+.0f}% to {hi:+.0f}%)")
        claimed = f"; claimed: {check.claimed}" if check.claimed else ""
        who = "" if verdict == "reported" else f" {names[0]} -> {names[1]}"
        text = f"{label}{who}: {ours}{claimed}"
    return CheckResult(check.metric, label, check.direction, check.claimed,
                       check.claimed_change_pct, e.unit, e.n_baseline, e.n_variant, e.baseline,
                       e.variant, e.change, e.change_ci, verdict, text,
                       [round(x, 3) for x in baseline if x is not None],
                       [round(x, 3) for x in variant if x is not None])


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
        return f"all {failed} requests failed"
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


def judge_claim(claim: Claim, run: Run, base: str, var: str) -> list[CheckResult]:
    timed = run.timed
    out = []
    for check in claim.checks:
        if check.metric == "batch_wall_ms":
            b, v, why = _walls(run.batches, base), _walls(run.batches, var), ""
        else:
            rows_b = [r for r in timed if r.name == base]
            rows_v = [r for r in timed if r.name == var]
            b, v = sample(rows_b, check.metric), sample(rows_v, check.metric)
            why = missing_reason(rows_b, check.metric) or missing_reason(rows_v, check.metric)
        out.append(judge(check, b, v, names=(base, var), why_missing=why))
    return out


def primary_verdict(checks: Sequence[CheckResult]) -> str:
    judged = [c for c in checks if c.direction != "report"]
    return judged[0].verdict if judged else "reported"

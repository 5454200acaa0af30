"""The seed articles' claims as experiments with verdict rules (presets/claims/*.yaml).

A claim names an experiment (the same format as presets/experiments/), the variant under test
(the experiment's baseline is the "before"), and one or more checks: a metric, the direction
the article claims, and the article's own number. `judge` turns two samples into a verdict:

- confirmed: the effect goes the claimed way and its 95% bootstrap CI excludes zero;
- refuted: it goes the other way and its CI excludes zero;
- no detectable difference: the CI contains zero;
- not measurable: fewer than two observations on a side (the reason is stated).

Our magnitude (relative change of medians for times, percentage points for rates) is always
reported next to the claimed one. A "batch" claim times N requests sent concurrently vs one
after another (wall clock per batch). Failures are data, never raised past the claim.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playground.core import request
from playground.core.client import ClientPool
from playground.core.compare import resolve_model
from playground.core.metrics import median
from playground.core.runner import new_recording, run_many
from playground.errors import PlaygroundError, PresetError
from playground.lab.bench import environment, run_experiment
from playground.lab.report import metric_values, split, summarize_run
from playground.lab.store import RunFile, RunStore
from playground.outputs.tables import recording_dict
from playground.settings import Settings
from playground.specs.presets import (
    Experiment,
    PresetLibrary,
    experiment_from_dict,
    first_error,
    load_dataset,
)
from playground.specs.presets import load_yaml as _load_yaml

LATENCY = {"ttft_ms": "TTFT", "ttfa_ms": "TTFA", "visible_wait_ms": "first visible character",
           "e2e_ms": "E2E", "tpot_ms": "TPOT", "batch_wall_ms": "wall time for the batch"}
RATES = {"json_valid": "valid JSON", "schema_valid": "schema-valid JSON",
         "field_accuracy": "field exact-match"}
MetricName = Literal["ttft_ms", "ttfa_ms", "visible_wait_ms", "e2e_ms", "tpot_ms",
                     "batch_wall_ms", "json_valid", "schema_valid", "field_accuracy"]
Verdict = Literal["confirmed", "refuted", "no detectable difference", "not measurable",
                  "reported"]


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: MetricName
    direction: Literal["lower", "higher", "report"]  # what the article says the variant does
    claimed: str = ""  # the article's number, in its words
    claimed_change_pct: float | None = None  # the same as a relative change (or pp for rates)


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    article: str
    quote: str
    variant: str | None = None  # the variant under test; the experiment's baseline is "before"
    kind: Literal["ab", "batch"] = "ab"
    batch_size: int = Field(default=10, ge=2, le=64)
    checks: list[Check] = Field(min_length=1)
    note: str = ""
    requires: Literal["langchain", "second-engine"] | None = None  # not runnable here
    experiment: dict[str, Any] | None = None

    def needs_servers(self) -> bool:
        """True when the experiment starts its own managed servers (a server A/B)."""
        variants = (self.experiment or {}).get("variants", [])
        return any(isinstance(v, dict) and v.get("server") for v in variants)


def load_claims(presets_dir: Path) -> tuple[dict[str, Claim], list[str]]:
    """Every presets/claims/*.yaml; a bad file is reported (file, field, reason) and skipped."""
    claims: dict[str, Claim] = {}
    errors: list[str] = []
    for path in sorted((presets_dir / "claims").glob("*.yaml")):
        try:
            data = _load_yaml(path)
            claim = Claim.model_validate(data)
            if claim.requires is None and claim.experiment is None:
                raise PresetError("experiment", "is required unless `requires` says why the "
                                  "claim cannot run here", str(path))
        except ValidationError as e:
            loc, msg = first_error(e)
            errors.append(str(PresetError(loc, msg, source=str(path))))
            continue
        except PlaygroundError as e:
            errors.append(str(e))
            continue
        claims[claim.id] = claim
    return claims, errors


def claim_experiment(claim: Claim, library: PresetLibrary, *, examples: int | None = None,
                     repetitions: int | None = None) -> Experiment:
    assert claim.experiment is not None
    data = dict(claim.experiment)
    if claim.kind == "ab":  # a batch claim's sample is one per repetition: keep its own
        if examples is not None:
            data["examples"] = examples
        if repetitions is not None:
            data["repetitions"] = repetitions
    exp = experiment_from_dict(data, library, source=f"claim {claim.id}")
    names = [v.name for v in exp.variants]
    if claim.variant not in names:
        raise PresetError("variant", f"{claim.variant!r} is not one of the experiment's "
                          f"variants {names}", source=f"claim {claim.id}")
    return exp


# --- verdicts ------------------------------------------------------------------------------


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
    change_ci: tuple[float, float] | None
    verdict: Verdict
    text: str
    values_baseline: list[float] = field(default_factory=list)  # the samples (for plots)
    values_variant: list[float] = field(default_factory=list)


def _boot(b: Sequence[float], v: Sequence[float], stat: Any, effect: Any, n_boot: int,
          seed: int) -> tuple[float, float]:
    rng = random.Random(seed)
    out = []
    for _ in range(n_boot):
        bb = stat([rng.choice(b) for _ in b])
        vv = stat([rng.choice(v) for _ in v])
        e = effect(bb, vv)
        if e is not None:
            out.append(e)
    out.sort()
    return out[int(0.025 * len(out))], out[min(len(out) - 1, int(0.975 * len(out)))]


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def _rel(b: float | None, v: float | None) -> float | None:
    return None if b is None or v is None or b <= 0 else 100 * (v / b - 1)


def judge(check: Check, baseline: Sequence[float], variant: Sequence[float], *,
          names: tuple[str, str] = ("baseline", "variant"), n_boot: int = 2000,
          seed: int = 0, why_missing: str = "") -> CheckResult:
    """Verdict for one check from the two samples (ms for times; 0..1 per request for rates)."""
    rate = check.metric in RATES
    label = RATES.get(check.metric) or LATENCY[check.metric]
    unit = "pp" if rate else "%"
    b = [x for x in baseline if x is not None]
    v = [x for x in variant if x is not None]

    def result(verdict: Verdict, text: str, bv: float | None = None, vv: float | None = None,
               change: float | None = None, ci: tuple[float, float] | None = None
               ) -> CheckResult:
        return CheckResult(check.metric, label, check.direction, check.claimed,
                           check.claimed_change_pct, unit, len(b), len(v), bv, vv, change, ci,
                           verdict, text, [round(x, 3) for x in b], [round(x, 3) for x in v])

    if len(b) < 2 or len(v) < 2:
        why = f" ({why_missing})" if why_missing else ""
        return result("not measurable", f"{label}: not enough observations (n={len(b)} vs "
                      f"{len(v)}){why}")
    if rate:
        bv, vv = 100 * _mean(b), 100 * _mean(v)
        change = vv - bv
        ci = _boot(b, v, _mean, lambda x, y: 100 * (y - x), n_boot, seed)
        ours = f"{bv:.0f}% -> {vv:.0f}% ({change:+.0f} pp, 95% CI {ci[0]:+.0f} to {ci[1]:+.0f})"
    else:
        bv, vv = median(b), median(v)
        assert bv is not None and vv is not None
        change = _rel(bv, vv)
        ci = _boot(b, v, median, _rel, n_boot, seed)
        pct = "n/a" if change is None else f"{change:+.0f}%"
        ours = (f"{bv:,.0f} -> {vv:,.0f} ms median ({pct}, 95% CI {ci[0]:+.0f}% to "
                f"{ci[1]:+.0f}%)")
    claimed = f"; claimed: {check.claimed}" if check.claimed else ""
    if check.direction == "report":
        return result("reported", f"{label}: {ours}{claimed}", bv, vv, change, ci)
    lo, hi = ci
    if lo <= 0 <= hi:
        verdict: Verdict = "no detectable difference"
    elif (hi < 0) == (check.direction == "lower"):
        verdict = "confirmed"
    else:
        verdict = "refuted"
    return result(verdict, f"{label} {names[0]} -> {names[1]}: {ours}{claimed}", bv, vv,
                  change, ci)


def sample(rows: Sequence[dict[str, Any]], metric: str) -> list[float]:
    """Per-request values of a metric: ms for times, 0/1 (or a fraction) for rates."""
    if metric in RATES:
        out = []
        for r in rows:
            s = r.get("score") or {}
            if r.get("error") is None and s.get(metric) is not None:
                out.append(float(s[metric]))
        return out
    if metric == "batch_wall_ms":
        return [r["wall_ms"] for r in rows if r.get("kind") == "batch"]
    return metric_values(rows, metric)


def missing_reason(rows: Sequence[dict[str, Any]], metric: str) -> str:
    if not rows:
        return "no finished request"
    failed = sum(r.get("error") is not None for r in rows)
    if failed == len(rows):
        return f"all {failed} requests failed"
    if metric == "ttfa_ms" and all(not r.get("content") for r in rows if r.get("error") is None):
        return "no answer text arrived: thinking never ended within max_tokens"
    if metric in ("ttft_ms", "ttfa_ms", "tpot_ms") and not any(
            r["raw"]["streaming"] for r in rows):
        return "not observable without streaming"
    if metric in RATES:
        return "no scored answers"
    return ""


# --- running ---------------------------------------------------------------------------------


@dataclass
class ClaimResult:
    id: str
    title: str
    article: str
    quote: str
    status: Literal["done", "skipped", "failed"]
    reason: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    verdict: str = "not run"  # the first non-"report" check's verdict
    note: str = ""
    baseline: str | None = None
    variant: str | None = None
    n_requests: int = 0
    n_failed: int = 0
    wall_s: float | None = None
    run_path: str | None = None
    summary: dict[str, Any] | None = None
    servers: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def primary_verdict(checks: Sequence[CheckResult]) -> str:
    judged = [c for c in checks if c.direction != "report"]
    return judged[0].verdict if judged else "reported"


@dataclass
class ClaimEvent:
    kind: Literal["progress", "result"]
    claim: str
    done: int = 0
    total: int = 0
    result: ClaimResult | None = None
    records: list[dict[str, Any]] = field(default_factory=list)


def skip_reason(claim: Claim, *, with_servers: bool) -> str | None:
    if claim.requires == "langchain":
        return "needs LangChain next to the openai SDK (not part of this tool)"
    if claim.requires == "second-engine":
        return "needs a second server (e.g. `transformers serve`) as a variant's base_url"
    if claim.needs_servers() and not with_servers:
        return ("starts two managed vLLM servers side by side; run with --with-servers "
                "(CLI) or tick 'include server A/Bs' (UI)")
    return None


def judge_claim(claim: Claim, records: Sequence[dict[str, Any]], base: str,
                var: str) -> list[CheckResult]:
    _, timed = split(records)
    batches = [r for r in records if r.get("kind") == "batch"]
    out = []
    for check in claim.checks:
        if check.metric == "batch_wall_ms":
            rows_b = [r for r in batches if r["variant"] == base]
            rows_v = [r for r in batches if r["variant"] == var]
        else:
            rows_b = [r for r in timed if r["variant"]["name"] == base]
            rows_v = [r for r in timed if r["variant"]["name"] == var]
        why = missing_reason(rows_b, check.metric) or missing_reason(rows_v, check.metric)
        out.append(judge(check, sample(rows_b, check.metric), sample(rows_v, check.metric),
                         names=(base, var), why_missing=why))
    return out


async def run_claim(settings: Settings, claim: Claim, library: PresetLibrary, *,
                    with_servers: bool = False, examples: int | None = None,
                    repetitions: int | None = None) -> AsyncIterator[ClaimEvent]:
    """Run one claim's experiment and judge it; yields progress, then one result."""
    head = dict(id=claim.id, title=claim.title, article=claim.article, quote=claim.quote,
                note=claim.note)
    reason = skip_reason(claim, with_servers=with_servers)
    if reason:
        yield ClaimEvent("result", claim.id, result=ClaimResult(**head, status="skipped",
                                                                 reason=reason))
        return
    t0 = time.perf_counter()
    records: list[dict[str, Any]] = []
    run_file = RunStore(settings.runs_dir).new_run("claims")
    try:
        exp = claim_experiment(claim, library, examples=examples, repetitions=repetitions)
        base = exp.baseline or exp.variants[0].name
        assert claim.variant is not None
        if claim.kind == "batch":
            events = run_batch(settings, claim, exp, run_file)
        else:
            events = _bench_records(settings, exp, run_file)
        async for done, total, rec in events:
            if rec is not None:
                records.append(rec)
            yield ClaimEvent("progress", claim.id, done, total)
    except PlaygroundError as e:
        yield ClaimEvent("result", claim.id, result=ClaimResult(
            **head, status="failed", reason=str(e), wall_s=time.perf_counter() - t0,
            run_path=str(run_file.path)), records=records)
        return
    checks = judge_claim(claim, records, base, claim.variant)
    summary = summarize_run(records)
    meta, timed = split(records)
    result = ClaimResult(**head, status="done", checks=checks, verdict=primary_verdict(checks),
                         baseline=base, variant=claim.variant, n_requests=len(timed),
                         n_failed=sum(r["error"] is not None for r in timed),
                         wall_s=time.perf_counter() - t0, run_path=str(run_file.path),
                         summary=summary, servers=meta.get("servers") or {})
    yield ClaimEvent("result", claim.id, result=result, records=records)


async def _bench_records(settings: Settings, exp: Experiment, run_file: RunFile
                         ) -> AsyncIterator[tuple[int, int, dict[str, Any] | None]]:
    async for ev in run_experiment(settings, exp, run_file=run_file):
        if ev.kind == "started":
            yield 0, ev.total, {"kind": "meta", **ev.meta}
        elif ev.kind == "request" and ev.record is not None:
            yield ev.done, ev.total, {"kind": "request", **ev.record}


async def run_batch(settings: Settings, claim: Claim, exp: Experiment, run_file: RunFile
                    ) -> AsyncIterator[tuple[int, int, dict[str, Any] | None]]:
    """Per repetition: `batch_size` requests one after another, and the same number sent at
    once (order alternates per repetition). One "batch" record per batch: its wall time."""
    model, _ = resolve_model(settings)
    rows = load_dataset(settings.presets_dir, exp.dataset, claim.batch_size)
    base = exp.baseline or exp.variants[0].name
    by_name = {v.name: v for v in exp.variants}
    sequential, concurrent = by_name[base], by_name[str(claim.variant)]
    run_id = uuid.uuid4().hex[:8]
    meta = environment(settings, exp, model)
    run_file.append({"kind": "meta", **meta})
    total = (exp.repetitions + exp.warmup) * 2 * len(rows)
    yield 0, total, {"kind": "meta", **meta}
    done = 0
    pool = ClientPool(settings.api_key_value(), connect_timeout_s=settings.connect_timeout_s,
                      read_timeout_s=settings.read_timeout_s, timeout_s=settings.timeout_s)
    try:
        for rep in range(-exp.warmup, exp.repetitions):
            order = [(sequential, 1), (concurrent, len(rows))]
            if rep % 2:
                order.reverse()
            for v, conc in order:
                recs = [new_recording(v, request.build(
                    v, row["input"], model, nonce=f"{run_id} {rep} {v.name} {i}"),
                    settings.base_url) for i, row in enumerate(rows)]
                t0 = time.perf_counter()
                await run_many(pool, recs, concurrency=conc, timeout_s=settings.timeout_s)
                wall_ms = 1000 * (time.perf_counter() - t0)
                phase = "warmup" if rep < 0 else "timed"
                for i, rec in enumerate(recs):
                    record = {"kind": "request", **recording_dict(rec), "phase": phase,
                              "trial": done + i, "example": i, "repetition": rep}
                    run_file.append(record)
                    yield done + i + 1, total, record
                done += len(recs)
                failed = sum(r.error is not None for r in recs)
                batch = {"kind": "batch", "variant": v.name, "phase": phase, "repetition": rep,
                         "requests": len(recs), "concurrency": conc, "failed": failed,
                         "wall_ms": wall_ms}
                run_file.append(batch)
                if phase == "timed" and not failed:
                    yield done, total, batch
    finally:
        await pool.aclose()

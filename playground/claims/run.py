"""Running one claim: its experiment (an A/B through lab/bench, or a batch), then its verdicts.

A "batch" claim times N requests sent concurrently vs one after another (wall clock per
batch). Every line goes to the claim's run file as it is measured; failures are data, never
raised past the claim.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from playground.claims.explain import (
    budget_note,
    client_overhead,
    engine_split,
    thinking_cost,
)
from playground.claims.verdicts import CheckResult, claim_verdict, judge_claim
from playground.core import request
from playground.core.compare import resolve_model
from playground.core.port import LIVE, Port
from playground.core.record import RequestRecord, failed
from playground.core.runner import new_recording, run_many
from playground.errors import PlaygroundError, PresetError
from playground.lab.bench import run_experiment, run_meta
from playground.lab.store import BatchRecord, Line, Run, RunFile, RunStore, read_run
from playground.lab.summary import summarize_run
from playground.settings import Settings
from playground.specs.claims import Claim
from playground.specs.experiments import Experiment, experiment_from_dict, load_dataset
from playground.specs.presets import PresetLibrary


def claim_experiment(claim: Claim, library: PresetLibrary, *, examples: int | None = None,
                     repetitions: int | None = None) -> Experiment:
    assert claim.experiment is not None
    data = dict(claim.experiment)
    # --repetitions (the page's "repetitions") applies to every claim: a batch claim's sample is
    # one batch per repetition, so fewer repetitions mean fewer samples (and the board says so
    # -- "too few samples"/"not measurable" -- rather than silently keeping the claim's own);
    # --examples applies to A/B claims (a batch always sends batch_size rows)
    if examples is not None and claim.kind == "ab":
        data["examples"] = examples
    if repetitions is not None:
        data["repetitions"] = repetitions
    exp = experiment_from_dict(data, library, source=f"claim {claim.id}")
    names = [v.name for v in exp.variants]
    if claim.variant not in names:
        raise PresetError("variant", f"{claim.variant!r} is not one of the experiment's "
                          f"variants {names}", source=f"claim {claim.id}")
    return exp


@dataclass
class ClaimResult:
    id: str
    title: str
    article: str
    quote: str
    status: Literal["done", "skipped", "failed"]
    reason: str = ""
    checks: list[CheckResult] = field(default_factory=list)
    verdict: str = "not run"  # verdicts.claim_verdict: part by part for a compound claim
    verdict_note: str = ""  # said with the verdict (a budget that fixed the ratio)
    note: str = ""
    baseline: str | None = None
    variant: str | None = None
    n_requests: int = 0
    n_failed: int = 0
    wall_s: float | None = None
    run_path: str | None = None
    summary: dict[str, Any] | None = None
    servers: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""  # claims/explain's worked model, when the claim asks for one
    model: str | None = None  # what the claim ran on
    demo_model: bool | None = None  # random weights (claims/honesty)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ClaimEvent:
    kind: Literal["progress", "result"]
    claim: str
    done: int = 0
    total: int = 0
    result: ClaimResult | None = None


def skip_reason(claim: Claim, *, with_servers: bool, thinking_model: bool = True) -> str | None:
    if claim.requires == "langchain":
        from playground.core.langchain_client import INSTALL_HINT, available

        if not available():
            return f"needs langchain-openai next to the openai SDK: {INSTALL_HINT}"
    budgets = [v for v in (claim.experiment or {}).get("variants", [])
               if isinstance(v, dict) and v.get("thinking_budget")]
    if budgets and not thinking_model:
        return ("the served model has no thinking mode (SmolLM2-135M-Instruct): run it on "
                "Qwen3 or the demo model")
    if claim.needs_servers() and not with_servers:
        return ("starts two managed vLLM servers side by side; run with --with-servers "
                "(CLI) or tick 'include server A/Bs' (UI)")
    return None


Progress = AsyncIterator[tuple[int, int, Line | None]]


async def run_claim(settings: Settings, claim: Claim, library: PresetLibrary, *,
                    with_servers: bool = False, examples: int | None = None,
                    repetitions: int | None = None, port: Port = LIVE,
                    thinking_model: bool = True) -> AsyncIterator[ClaimEvent]:
    """Run one claim's experiment and judge it; yields progress, then one result."""
    head = dict(id=claim.id, title=claim.title, article=claim.article, quote=claim.quote,
                note=claim.note)
    reason = skip_reason(claim, with_servers=with_servers, thinking_model=thinking_model)
    if reason:
        yield ClaimEvent("result", claim.id, result=ClaimResult(**head, status="skipped",
                                                                 reason=reason))
        return
    t0 = time.perf_counter()
    run = Run()
    run_file = RunStore(settings.runs_dir).new_run("claims")
    try:
        exp = claim_experiment(claim, library, examples=examples, repetitions=repetitions)
        base = exp.baseline_name
        assert claim.variant is not None
        events = (run_batch(settings, claim, exp, run_file, port) if claim.kind == "batch"
                  else _bench_lines(settings, exp, run_file, port))
        async for done, total, line in events:
            if line is not None:
                run.add(line)
            yield ClaimEvent("progress", claim.id, done, total)
    except PlaygroundError as e:
        yield ClaimEvent("result", claim.id, result=ClaimResult(
            **head, status="failed", reason=str(e), wall_s=time.perf_counter() - t0,
            run_path=str(run_file.path)))
        return
    try:  # what the events do not carry: the server's series (a batch claim has none)
        saved = read_run(run_file.path)
        run.server, run.gpu, run.series_info = saved.server, saved.gpu, saved.series_info
    except (PlaygroundError, OSError):
        pass  # the verdicts stand without it
    checks = judge_claim(claim, run, base, claim.variant)
    timed = run.timed
    explanation, note = worked(claim, run, exp, base)
    result = ClaimResult(**head, status="done", checks=checks, verdict=claim_verdict(checks),
                         baseline=base, variant=claim.variant, n_requests=len(timed),
                         n_failed=failed(timed), wall_s=time.perf_counter() - t0,
                         run_path=str(run_file.path),
                         summary=summarize_run(run).model_dump(mode="json", by_alias=True),
                         servers=run.meta.servers, explanation=explanation,
                         verdict_note=note,
                         model=run.meta.model,
                         demo_model=run.meta.demo_model)
    yield ClaimEvent("result", claim.id, result=result)


def worked(claim: Claim, run: Run, exp: Experiment, base: str) -> tuple[str, str]:
    """(the worked model shown under the row, the note said with its verdict), from the
    claim's own requests (claims/explain)."""
    var = str(claim.variant)
    timed = run.timed
    rows_b = [r for r in timed if r.name == base]
    rows_v = [r for r in timed if r.name == var]
    variants = (run.meta.experiment or exp).variants
    if claim.explain == "thinking-cost":
        budget = next(v for v in variants if v.name == var).thinking_budget
        return (thinking_cost(rows_b, rows_v, budget), budget_note(rows_b, rows_v, budget))
    if claim.explain == "engine-queueing":
        serial = {v.name for v in variants if v.engine == "transformers"}
        check = next((c for c in claim.checks if c.direction != "report"), None)
        return "", engine_split(rows_b, rows_v, (base, var), serial,
                                check.claimed if check else "")
    if claim.explain == "client-overhead":
        return client_overhead(rows_b, rows_v, base, var), ""
    return "", ""


async def _bench_lines(settings: Settings, exp: Experiment, run_file: RunFile, port: Port
                       ) -> Progress:
    async for ev in run_experiment(settings, exp, run_file=run_file, port=port):
        if ev.kind == "started":
            yield 0, ev.total, ev.meta
        elif ev.kind == "request" and ev.record is not None:
            yield ev.done, ev.total, ev.record


async def run_batch(settings: Settings, claim: Claim, exp: Experiment, run_file: RunFile,
                    port: Port = LIVE) -> Progress:
    """Per repetition: `batch_size` requests one after another, and the same number sent at
    once (order alternates per repetition). One batch line per batch: its wall time."""
    model, _ = await resolve_model(settings, port)
    rows = load_dataset(settings.presets_dir, exp.dataset, claim.batch_size)
    by_name = {v.name: v for v in exp.variants}
    sequential, concurrent = by_name[exp.baseline_name], by_name[str(claim.variant)]
    run_id = uuid.uuid4().hex[:8]
    meta = await run_meta(settings, exp, model, port)
    run_file.append(meta)
    total = (exp.repetitions + exp.warmup) * 2 * len(rows)
    yield 0, total, meta
    done = 0
    pool = port.pool(settings, auto_client="raw")  # the lab reads raw (docs/load.md)
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
                await run_many(pool, recs, concurrency=conc,  # type: ignore[arg-type]
                               timeout_s=settings.timeout_s)
                wall_ms = 1000 * (time.perf_counter() - t0)
                phase: Literal["warmup", "timed"] = "warmup" if rep < 0 else "timed"
                for i, rec in enumerate(recs):
                    record = RequestRecord.of(rec, phase=phase, trial=done + i, example=i,
                                              repetition=rep)
                    run_file.append(record)
                    yield done + i + 1, total, record
                done += len(recs)
                batch = BatchRecord(variant=v.name, phase=phase, repetition=rep,
                                    requests=len(recs), concurrency=conc,
                                    failed=sum(r.error is not None for r in recs),
                                    wall_ms=wall_ms)
                run_file.append(batch)
                yield done, total, batch
    finally:
        await pool.aclose()

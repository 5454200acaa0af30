"""A finished (or stopped) benchmark run -> its typed summary, and the files written from it.

Works from the run's typed records alone (lab/store.Run), without knowing how they were
measured. Every statistic comes from lab/stats; every per-request number from core/metrics.
The summary is core/results.RunSummary (results.json's `summary`), the input of every report
view.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from playground.core.metrics import residual_ms, server_parts
from playground.core.record import RequestRecord, by_variant, failed, values
from playground.core.results import (
    BackgroundSummary,
    Comparison,
    GridCell,
    Objectives,
    RunSummary,
    ServerShare,
    ServerSummary,
    VariantSummary,
)
from playground.lab import insight
from playground.lab.calls import Call, Effect, call, compare, holm, too_few_text
from playground.lab.stats import median, summarize
from playground.lab.store import Run
from playground.outputs import files
from playground.outputs.fmt import METRIC_LABELS
from playground.server.series import describe as series_text

COMPARED = ("visible_wait_ms", "e2e_ms", "ttft_ms")


def server_share(rows: Sequence[RequestRecord]) -> ServerShare:
    """Medians of the server's parts (queue, prefill, decode) and of the residual."""
    queue, prefill, decode, rest = [], [], [], []
    for r in rows:
        parts = server_parts(r.raw) if r.ok else None
        left = residual_ms(r.raw, r.metrics.e2e_ms) if parts else None
        if parts is None or left is None:
            continue
        queue.append(parts.queue_ms)
        prefill.append(parts.prefill_ms)
        decode.append(parts.decode_ms)
        rest.append(left)
    return ServerShare(queue_ms=median(queue), prefill_ms=median(prefill),
                       decode_ms=median(decode), rest_ms=median(rest))


def _rate(flags: Sequence[bool | None]) -> float | None:
    seen = [f for f in flags if f is not None]
    return 100 * sum(seen) / len(seen) if seen else None


def variant_summary(rows: Sequence[RequestRecord]) -> VariantSummary:
    scored = [r.score for r in rows if r.ok and r.score is not None]
    acc = [s.field_accuracy for s in scored if s.field_accuracy is not None]
    return VariantSummary(
        n=len(rows), failed=failed(rows),
        metrics={m: summarize(values(rows, m)) for m in METRIC_LABELS},
        json_valid_pct=_rate([s.json_valid for s in scored]),
        schema_valid_pct=_rate([s.schema_valid for s in scored]),
        field_exact_pct=100 * sum(acc) / len(acc) if acc else None,
        server=server_share(rows), at_once=at_once(rows))


AT_ONCE_SHARE = 0.05  # the last token within 5% of E2E after the first
AT_ONCE_MIN_TOKENS = 8


def at_once(rows: Sequence[RequestRecord]) -> int:
    """Streamed replies whose tokens all arrived together: the first token came with the last
    (a server too starved of CPU to stream -- on a 2-core box, any periodic work beside vLLM
    can do it). Their TTFT is their E2E, which the report must say."""
    n = 0
    for r in rows:
        m = r.metrics
        if (r.ok and m.ttft_ms is not None and m.e2e_ms and (m.completion_tokens or 0)
                >= AT_ONCE_MIN_TOKENS and m.e2e_ms - m.ttft_ms < AT_ONCE_SHARE * m.e2e_ms):
            n += 1
    return n


def verdict_text(label: str, names: tuple[str, str], effect: Effect, decided: Call,
                 p_adjusted: float | None = None) -> str:
    """One benchmark comparison in words (variant vs baseline), from lab/calls' rule."""
    base, other = names
    if decided == "not measurable":
        return (f"{label}, {other} vs {base}: not enough data (n={effect.n_baseline} vs "
                f"{effect.n_variant})")
    assert effect.diff is not None and effect.p_value is not None
    if decided == "too few samples":
        return f"{label}, {other} vs {base}: {too_few_text(effect)}"
    ci = ""
    if effect.change_ci is not None:
        ci = f"95% CI {effect.change_ci[0]:+.0f}% to {effect.change_ci[1]:+.0f}%, "
    p = f"p={effect.p_value:.3g}" + ("" if p_adjusted is None or p_adjusted == effect.p_value
                                     else f", Holm-adjusted {p_adjusted:.3g}")
    change = "" if effect.change is None else f" ({effect.change:+.0f}%)"
    if decided == "none":
        return (f"{label}: no detectable difference between {other} and {base} "
                f"(median diff {effect.diff:+.0f} ms{change}; {ci}{p})")
    times = f", {effect.ratio:.2f}x" if effect.ratio is not None else ""
    word = "faster" if decided == "lower" else "slower"
    return (f"{label}: {other} is {abs(effect.diff):.0f} ms{change} {word} than {base} "
            f"({ci}{p}{times})")


def comparison(metric: str, base: str, name: str, b: Sequence[RequestRecord],
               v: Sequence[RequestRecord]) -> tuple[str, str, str, Effect]:
    return metric, base, name, compare(values(b, metric), values(v, metric))


def decide(found: Sequence[tuple[str, str, str, Effect]]) -> list[Comparison]:
    """A run's comparisons as one family: each decided on its Holm-adjusted p-value."""
    adjusted = holm([e.p_value if call(e) not in ("not measurable", "too few samples")
                     else None for *_, e in found])
    out = []
    for (metric, base, name, e), p_adj in zip(found, adjusted, strict=True):
        decided = call(e, p_adj)
        out.append(Comparison(
            metric=metric, baseline=base, variant=name, effect=e,
            call=decided, p_adjusted=p_adj,
            verdict=verdict_text(METRIC_LABELS[metric], (base, name), e, decided, p_adj)))
    return out


def summarize_run(run: Run, *, ttft_slo_ms: float | None = None,
                  e2e_slo_ms: float | None = None) -> RunSummary:
    timed = run.timed
    exp = run.meta.experiment
    groups = by_variant(timed)
    names = [v.name for v in exp.variants] if exp else list(groups)
    baseline = exp.baseline_name if exp else (names[0] if names else None)
    by = {n: groups.get(n, []) for n in names}
    found = []
    for n in names:
        if baseline is None or n == baseline:
            continue
        for m in COMPARED:
            if m == "ttft_ms" and not (values(by[baseline], m) and values(by[n], m)):
                continue  # TTFT is not observable for a non-streaming side
            found.append(comparison(m, baseline, n, by[baseline], by[n]))
    comparisons = decide(found)
    bg = run.background
    return RunSummary(
        meta=run.meta, baseline=baseline,
        variants={n: variant_summary(rows) for n, rows in by.items()},
        comparisons=comparisons, n_requests=len(timed), n_failed=failed(timed),
        phases=insight.median_phases(timed), definitions=insight.definitions(timed),
        slo=Objectives(ttft_ms=ttft_slo_ms, e2e_ms=e2e_slo_ms),
        goodput_pct=insight.goodput(timed, ttft_slo_ms, e2e_slo_ms),
        grid=[GridCell(**c) for c in insight.grid(timed)] if insight.is_grid(timed) else None,
        floor_ms=run.meta.floor_ms,
        background=(BackgroundSummary(**bg.model_dump(), text=bg.describe()) if bg else None),
        server=server_summary(run))


def server_summary(run: Run) -> ServerSummary | None:
    """What the server (and its GPUs) did while the timed trials ran, with its sentence."""
    series = run.series
    if series is None:
        return None
    found = series.summary()
    return ServerSummary(**found, text=series_text(found))


def write_outputs(run: Run, out_dir: Path, *, ttft_slo_ms: float | None = None,
                  e2e_slo_ms: float | None = None, plotlyjs: files.PlotlyJs = "inline"
                  ) -> dict[str, Path]:
    """requests.csv (one row per timed request), results.json (summary + every request) and
    report.html (plotly.js inline by default: opens offline)."""
    summary = summarize_run(run, ttft_slo_ms=ttft_slo_ms, e2e_slo_ms=e2e_slo_ms)
    return files.write_run_files(summary, run.timed, out_dir, plotlyjs=plotlyjs,
                                 series=run.series)

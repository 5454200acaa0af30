"""HTML from jinja2 templates (outputs/templates, autoescape on): the benchmark report, the
claims board's stakeholder report and the phase bar. No HTML is assembled by hand.

plotly.js is inlined (the file opens offline) or loaded from the plotly CDN, by option, so a
generated file never needs post-editing.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any, Literal

import jinja2
import plotly.graph_objects as go
import plotly.offline
from markupsafe import Markup

from playground.core.phases import Breakdown
from playground.core.record import RequestRecord
from playground.core.results import RunSummary
from playground.core.sweep_doc import SweepDoc, SweepLevel
from playground.outputs import board_view, report_figures, sweep_figure, tables, versus_view
from playground.outputs.fmt import DEMO_NOTICE, at_once_text, verdict_color
from playground.outputs.series_figure import levels_figure, series_figure
from playground.server.series import Series

PlotlyJs = Literal["inline", "cdn"]


@cache
def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.PackageLoader("playground.outputs", "templates"),
                              autoescape=True, undefined=jinja2.StrictUndefined,
                              trim_blocks=True, lstrip_blocks=True)


def _plotly(mode: PlotlyJs) -> dict[str, Any]:
    if mode == "cdn":
        version = plotly.offline.get_plotlyjs_version()
        return {"plotly_src": f"https://cdn.plot.ly/plotly-{version}.min.js", "plotly_js": ""}
    return {"plotly_src": None, "plotly_js": Markup(plotly.offline.get_plotlyjs())}


def div(fig: go.Figure) -> Markup:
    """A figure as a <div> (plotly's own markup; plotly.js comes from the page head)."""
    return Markup(plotly.offline.plot(fig, output_type="div", include_plotlyjs=False))


def floor_text(floor_ms: float | None) -> str:
    if floor_ms:
        return (f"Physical floor: {floor_ms:.3f} ms per decode step at batch 1 (weight bytes / "
                "memory bandwidth; KV-cache reads, activations and launch overheads ignored; "
                "see docs/measurement.md).")
    return ("Physical floor: unknown (the accelerator of a remote server is not known; set "
            "PLAYGROUND_ACCELERATOR).")


def method_text(exp: dict[str, Any]) -> str:
    return (f"{exp.get('repetitions')} repetition(s) over {exp.get('examples') or 'all'} "
            f"example(s) of data set '{exp.get('dataset')}', {exp.get('warmup')} untimed "
            f"warm-up request(s) per variant, order {exp.get('order')}, concurrency "
            f"{exp.get('concurrency')}, cache policy {exp.get('cache')} "
            "(cold = a unique first line per request, so no prefix-cache hits). Medians "
            "with bootstrap 95% CIs; a difference is called only when its CI excludes 0.")


def report(summary: RunSummary, timed: Sequence[RequestRecord], *,
           plotlyjs: PlotlyJs = "inline", series: Series | None = None) -> str:
    meta = summary.meta
    exp = (meta.experiment.model_dump(mode="json", by_alias=True)
           if meta.experiment is not None else {})
    figs = [report_figures.box_plot(timed, "visible_wait_ms"),
            report_figures.box_plot(timed, "ttft_ms"), report_figures.box_plot(timed, "e2e_ms"),
            report_figures.phase_figure(summary.phases),
            report_figures.tpot_floor_figure(timed, summary.floor_ms),
            report_figures.accuracy_plot(summary)]
    server = series_figure(series, timed)  # on the requests' time axis
    figs += [server] if server is not None else []
    env = {k: getattr(meta, k) for k in ("model", "base_url", "vllm_version", "machine",
                                         "demo_model")}
    bg = summary.background
    return _env().get_template("report.html.j2").render(
        **_plotly(plotlyjs), title=exp.get("name", "benchmark"),
        description=exp.get("description", ""),
        demo_notice=DEMO_NOTICE if meta.demo_model else "",
        baseline=summary.baseline, verdicts=[c.verdict for c in summary.comparisons]
        + [f"Warning: {w}" for w in at_once_text(summary)],
        summary_headers=tables.SUMMARY_HEADERS, summary_rows=tables.summary_rows(summary),
        n_requests=summary.n_requests, n_failed=summary.n_failed,
        figures=[div(f) for f in figs], objectives=tables.objectives(summary.slo),
        why_headers=tables.WHY_HEADERS, why_rows=tables.why_rows(summary),
        floor_text=floor_text(summary.floor_ms),
        background=bg if bg and bg.requests_in_flight else None,
        background_text=bg.text if bg else "",
        server_text=summary.server.text if summary.server else "",
        grid_headers=tables.GRID_HEADERS,
        grid_rows=tables.grid_rows(summary.grid) if summary.grid else [],
        method=method_text(exp), environment=json.dumps(env, ensure_ascii=False))


def board(doc: dict[str, Any], *, plotlyjs: PlotlyJs = "inline") -> str:
    rows = [{"cells": r, "color": verdict_color(r[4], "#333")}
            for r in board_view.board_rows(doc)]
    details = []
    for c in doc["claims"]:
        if c["status"] == "done":
            fig = report_figures.claim_figure(c)
            details.append({**c, "figure": div(fig) if fig else None,
                            "ran_on": board_view.ran_on(c)})
    return _env().get_template("board.html.j2").render(
        **_plotly(plotlyjs), title="Claims board",
        demo_notice=DEMO_NOTICE if doc["environment"].get("demo_model") else "",
        environment=board_view.env_lines(doc), headers=board_view.BOARD_HEADERS, rows=rows,
        overview=div(report_figures.verdict_figure(doc)), api_rows=doc["api_checks"],
        method=board_view.METHOD, details=details)


SWEEP_HEADERS = ["level", "engine", "n", "failed", "req/s", "TTFT p50 / p99 ms",
                 "TPOT p50 / p99 ms", "send delay p50 / p99 ms", "readers (nodes)"]


def sweep(doc: SweepDoc, *, plotlyjs: PlotlyJs = "inline",
          series: Sequence[tuple[str, Series]] = ()) -> str:
    """A sweep's report: the Pareto view (outputs/sweep_figure), the server's series level by
    level (outputs/series_figure.levels_figure) and the levels."""
    def pair(lv: SweepLevel, m: str) -> str:
        a, b = getattr(lv, f"{m}_p50_ms"), getattr(lv, f"{m}_p99_ms")
        return "-" if a is None else f"{a:.1f} / {b:.1f}" if b is not None else f"{a:.1f}"

    rows = [[sweep_figure.label(lv), lv.engine or "playground", lv.n, lv.failed,
             "-" if lv.req_per_s is None else f"{lv.req_per_s:.2f}",
             pair(lv, "ttft"), pair(lv, "tpot"),
             pair(lv, "send_delay") + (" client-bound" if lv.client_bound else ""),
             f"{lv.workers or 1}" + (f" ({len(lv.nodes)})" if lv.nodes else "")]
            for lv in doc.levels]
    fig = sweep_figure.sweep_figure(doc)
    server = levels_figure(series, doc)
    notes = sorted({s.gpu_note for _, s in series if s.gpu_note})
    m = doc.machine
    return _env().get_template("sweep.html.j2").render(
        **_plotly(plotlyjs), title="Sweep", heading=f"Sweep of {doc.model}",
        facts=(f"{doc.base_url}, vLLM {doc.vllm}, {doc.output_len} "
               f"tokens per answer, {doc.date}; client machine: "
               f"{m.get('cpu', '?')}, {m.get('cores', '?')} cores."),
        legend=("Circles: the load path; diamonds: vllm bench serve (the dotted line is the "
                "hand-off). In open-loop levels a marker's size grows with the send delay "
                "(p99), and a red ring marks a level where the client was the bottleneck."),
        figure=div(fig) if fig else None, stopped=doc.stopped,
        server_figure=div(server) if server else None, gpu_notes=notes,
        headers=SWEEP_HEADERS, rows=rows)


def versus(runs: Sequence[dict[str, Any]], tables: Sequence[dict[str, Any]], *,
           plotlyjs: PlotlyJs = "inline") -> str:
    """Runs side by side (outputs/versus_view). `runs`: name, tool, model, n, failed, notes and
    `timed` (the run's timed records) each; `tables`: a heading and rows (requests, metric, n,
    verdict) each -- the first run against each other run (cli/bench builds both)."""
    pairs = [(r["name"], r["timed"]) for r in runs]
    return _env().get_template("versus.html.j2").render(
        **_plotly(plotlyjs), title="Runs compared",
        heading=" vs ".join(r["name"] for r in runs), runs=runs,
        distributions=div(versus_view.distributions(pairs)),
        timeline=div(versus_view.timeline(pairs)),
        timeline_note=("A run imported from a tool that keeps no send times (vllm bench "
                       "serve's result) has all its requests at 0."),
        method=("Medians of the successful timed requests; the change's 95% interval by test "
                "inversion of the claims board's permutation test; Holm over the metrics of "
                "each table."),
        tables=tables)


def phase_bar(b: Breakdown | None, width_px: int = 260) -> str:
    """A stacked bar (inline HTML, no JS) with a one-line legend."""
    if b is None:
        return ""
    total = sum(max(0.0, ms) for _, ms in b.parts) or 1.0
    colors = report_figures.PHASE_COLORS
    parts = [{"name": name, "label": f"{ms:,.0f}", "color": colors[name],
              "width": max(0.0, ms) / total * width_px} for name, ms in b.parts]
    legend = [p for p, (name, ms) in zip(parts, b.parts, strict=True)
              if abs(ms) >= 0.5 or name == "transport + client"]
    note = ("transport + client = E2E minus the server's parts" if b.residual_ms >= 0
            else "negative residual: server and client clocks disagree")
    if b.source.startswith("client"):
        note = "client timestamps only (no per-request server metrics)"
    return _env().get_template("phase_bar.html.j2").render(
        parts=parts, legend=legend, e2e=f"{b.e2e_ms:,.0f}", note=note)

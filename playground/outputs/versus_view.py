"""Runs side by side (`playground runs compare A B [C ...] --html FILE`): ours or imported, on one
chart -- each run's latency distributions (an ECDF per metric) and its requests on the run's
own time axis, aligned at its first request -- and the verdict tables of lab/versus (A vs each
other run; cli/bench builds them). Rendered by outputs/html.versus."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from playground.core.record import RequestRecord, values
from playground.outputs.live_svg import COLORS as PALETTE


def _ecdf(xs: list[float]) -> tuple[list[float], list[float]]:
    xs = sorted(xs)
    return xs, [(i + 1) / len(xs) for i in range(len(xs))]


METRICS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E"}
Runs = Sequence[tuple[str, Sequence[RequestRecord]]]  # (name, the run's timed records)


def distributions(runs: Runs) -> go.Figure:
    """One ECDF per run and metric (TTFT, TPOT, E2E): where a run's whole distribution sits,
    not only its median."""
    fig = make_subplots(rows=1, cols=len(METRICS), subplot_titles=[
        f"{label} (ms)" for label in METRICS.values()])
    for i, (name, timed) in enumerate(runs):
        color = PALETTE[i % len(PALETTE)]
        for col, metric in enumerate(METRICS, 1):
            xs = values(timed, metric)
            if not xs:
                continue
            x, y = _ecdf(xs)
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", line={"shape": "hv", "color": color},
                                     name=name, legendgroup=name, showlegend=col == 1), 1, col)
    fig.update_yaxes(title_text="share of requests at or below", row=1, col=1, range=[0, 1.02])
    fig.update_layout(height=400, margin={"t": 70, "b": 40},
                      legend={"orientation": "h", "y": 1.18, "yanchor": "bottom"})
    return fig


def _offsets(rows: Sequence[RequestRecord]) -> list[tuple[float, RequestRecord]]:
    """(seconds since the run's first request was sent, request) on the run's one clock (ours:
    the measuring machine's, Ray readers' stamps moved onto it; an import's: its tool's)."""
    sent = [(r.raw.t_send, r) for r in rows if r.raw.t_send is not None]
    t0 = min((t for t, _ in sent), default=0.0)
    return sorted(((t - t0, r) for t, r in sent), key=lambda x: x[0])


def timeline(runs: Runs) -> go.Figure:
    """Each request's TTFT and E2E at the moment it was sent, every run from its own start."""
    fig = make_subplots(rows=1, cols=2, subplot_titles=["TTFT (ms)", "E2E (ms)"])
    for i, (name, timed) in enumerate(runs):
        pts = _offsets(timed)
        for col, metric in ((1, "ttft_ms"), (2, "e2e_ms")):
            got = [(t, getattr(r.metrics, metric)) for t, r in pts]
            got = [(t, v) for t, v in got if v is not None]
            fig.add_trace(go.Scatter(
                x=[t for t, _ in got], y=[v for _, v in got], mode="markers",
                marker={"color": PALETTE[i % len(PALETTE)], "size": 6}, name=name,
                legendgroup=name, showlegend=col == 1), 1, col)
    fig.update_xaxes(title_text="seconds since the run's first request")
    fig.update_layout(height=380, margin={"t": 70, "b": 40},
                      legend={"orientation": "h", "y": 1.18, "yanchor": "bottom"})
    return fig

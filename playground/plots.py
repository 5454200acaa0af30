"""PURE: recordings -> plotly figures (no gradio import)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from .runner import Recording

COLORS = ["#4C78A8", "#F58518", "#54A24B", "#B279A2"]


def _layout(fig: go.Figure, title: str, **kw: Any) -> go.Figure:
    fig.update_layout(title=title, height=320, margin=dict(l=50, r=20, t=40, b=40),
                      legend=dict(orientation="h", y=-0.25), template="plotly_white", **kw)
    return fig


def timeline(recs: Sequence[Recording]) -> go.Figure:
    """Cumulative token chunks vs ms since send, one line per variant.

    A non-streaming variant shows a single vertical jump at E2E: nothing is visible before.
    """
    fig = go.Figure()
    for i, rec in enumerate(recs):
        raw, color = rec.raw, COLORS[i % len(COLORS)]
        if raw.t_send is None:
            continue
        if raw.streaming:
            xs = [(t - raw.t_send) * 1000 for t in raw.token_times]
            ys = list(range(1, len(xs) + 1))
        elif raw.t_last is not None:
            e2e = (raw.t_last - raw.t_send) * 1000
            n = raw.usage.completion_tokens or 1
            xs, ys = [0.0, e2e, e2e], [0, 0, n]
        else:
            xs, ys = [], []
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=rec.variant.name,
                                 line=dict(color=color, shape="hv" if not raw.streaming
                                           else "linear")))
    return _layout(fig, "Token timeline", xaxis_title="ms since send",
                   yaxis_title="token chunks")


def latency_bars(recs: Sequence[Recording]) -> go.Figure:
    fig = go.Figure()
    names = [r.variant.name for r in recs]
    ms = [r.metrics() for r in recs]
    series = [("TTFT", [m.ttft_ms for m in ms]), ("TTFA", [m.ttfa_ms for m in ms]),
              ("E2E", [m.e2e_ms for m in ms])]
    for (label, values), color in zip(series, COLORS, strict=False):
        fig.add_trace(go.Bar(name=label, x=names, y=values, marker_color=color,
                             text=["n/a" if v is None else f"{v:.0f}" for v in values],
                             textposition="outside"))
    return _layout(fig, "TTFT / TTFA / E2E per variant (n/a = not observable)",
                   barmode="group", yaxis_title="ms")


def history(rows: Sequence[dict[str, Any]]) -> go.Figure:
    """This session's runs: E2E (and TTFT when streaming) per variant over run number."""
    fig = go.Figure()
    variants = sorted({r["variant"] for r in rows})
    for i, name in enumerate(variants):
        mine = [r for r in rows if r["variant"] == name]
        color = COLORS[i % len(COLORS)]
        fig.add_trace(go.Scatter(x=[r["run"] for r in mine], y=[r["e2e_ms"] for r in mine],
                                 mode="lines+markers", name=f"{name} E2E",
                                 line=dict(color=color)))
        if any(r["ttft_ms"] is not None for r in mine):
            fig.add_trace(go.Scatter(x=[r["run"] for r in mine],
                                     y=[r["ttft_ms"] for r in mine], mode="markers",
                                     name=f"{name} TTFT",
                                     marker=dict(color=color, symbol="x")))
    return _layout(fig, "This session's runs", xaxis_title="run", yaxis_title="ms")

"""PURE: recordings -> plotly figures (no gradio import).

Figures are built from plain dicts without plotly's validation (`_validate=False`) and
without a named template: during a live run they are rebuilt several times a second on the
UI's event loop, and validation plus template expansion cost ~40 ms per figure there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from playground.core.runner import Recording

COLORS = ["#4C78A8", "#F58518", "#54A24B", "#B279A2"]


_AXIS = {"gridcolor": "#e5e5e5", "zerolinecolor": "#cccccc", "automargin": True}


def _figure(traces: list[dict[str, Any]], title: str, *, xaxis_title: str = "",
            yaxis_title: str = "", **layout: Any) -> go.Figure:
    spec = {
        "data": traces,
        "layout": {
            "title": {"text": title}, "height": 320,
            "margin": {"l": 50, "r": 20, "t": 40, "b": 40},
            "legend": {"orientation": "h", "y": -0.25},
            "paper_bgcolor": "white", "plot_bgcolor": "white",
            "xaxis": {**_AXIS, "title": {"text": xaxis_title}},
            "yaxis": {**_AXIS, "title": {"text": yaxis_title}},
            **layout,
        },
    }
    return go.Figure(spec, _validate=False)


def timeline(recs: Sequence[Recording], floor_ms: float | None = None) -> go.Figure:
    """Cumulative token chunks vs ms since send, one line per variant.

    A non-streaming variant shows a single vertical jump at E2E: nothing is visible before.
    `floor_ms` (the physical floor per decode step) is drawn as a dashed line from the
    earliest first token: no server can generate faster than that line.
    """
    traces: list[dict[str, Any]] = []
    for i, rec in enumerate(recs):
        raw = rec.raw
        if raw.t_send is None:
            continue
        if raw.streaming:
            xs = [round((t - raw.t_send) * 1000, 2) for t in raw.token_times]
            ys = list(range(1, len(xs) + 1))
        elif raw.t_last is not None:
            e2e = round((raw.t_last - raw.t_send) * 1000, 2)
            xs, ys = [0.0, e2e, e2e], [0, 0, raw.usage.completion_tokens or 1]
        else:
            xs, ys = [], []
        traces.append({"type": "scatter", "mode": "lines", "x": xs, "y": ys,
                       "name": rec.variant.name,
                       "line": {"color": COLORS[i % len(COLORS)],
                                "shape": "linear" if raw.streaming else "hv"}})
    firsts = [(t["x"][0], max(t["y"])) for t in traces if t["x"] and t["line"]["shape"] ==
              "linear"]
    if floor_ms and firsts:
        x0 = min(x for x, _ in firsts)
        n = max(y for _, y in firsts)
        traces.append({"type": "scatter", "mode": "lines", "x": [x0, x0 + floor_ms * (n - 1)],
                       "y": [1, n], "name": f"physical floor ({floor_ms:.2f} ms/token)",
                       "line": {"color": "#000", "dash": "dash", "width": 1}})
    return _figure(traces, "Token timeline", xaxis_title="ms since send",
                   yaxis_title="token chunks")


def latency_bars(recs: Sequence[Recording]) -> go.Figure:
    names = [r.variant.name for r in recs]
    ms = [r.metrics() for r in recs]
    series = [("TTFT", [m.ttft_ms for m in ms]), ("TTFA", [m.ttfa_ms for m in ms]),
              ("E2E", [m.e2e_ms for m in ms])]
    traces = [{"type": "bar", "name": label, "x": names, "y": values,
               "marker": {"color": color}, "textposition": "outside",
               "text": ["n/a" if v is None else f"{v:.0f}" for v in values]}
              for (label, values), color in zip(series, COLORS, strict=False)]
    return _figure(traces, "TTFT / TTFA / E2E per variant (n/a = not observable)",
                   yaxis_title="ms", barmode="group")


def history(rows: Sequence[dict[str, Any]]) -> go.Figure:
    """This session's runs: E2E (and TTFT when streaming) per variant over run number."""
    traces: list[dict[str, Any]] = []
    for i, name in enumerate(sorted({r["variant"] for r in rows})):
        mine = [r for r in rows if r["variant"] == name]
        color = COLORS[i % len(COLORS)]
        runs = [r["run"] for r in mine]
        traces.append({"type": "scatter", "mode": "lines+markers", "name": f"{name} E2E",
                       "x": runs, "y": [r["e2e_ms"] for r in mine], "line": {"color": color}})
        if any(r["ttft_ms"] is not None for r in mine):
            traces.append({"type": "scatter", "mode": "markers", "name": f"{name} TTFT",
                           "x": runs, "y": [r["ttft_ms"] for r in mine],
                           "marker": {"color": color, "symbol": "x"}})
    return _figure(traces, "This session's runs", xaxis_title="run", yaxis_title="ms")

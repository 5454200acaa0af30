"""PURE: what the server was doing, on the requests' time axis (plotly, no gradio).

Top: each timed request's wait (first visible character by default) at the moment it was sent,
one colour per variant. Bottom, on the same seconds: the server's running and waiting requests
(its /metrics gauges), its KV-cache usage and each GPU's utilisation. So "TTFT rose here
because 40 requests were waiting" is seen, not inferred.

The sampler and an in-process reader read one clock (time.perf_counter), so their times line up
as stored. Rows read by reader processes (their own clocks, `clock_origin` set) are left out of
the top panel, and its title says how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from playground.core.record import RequestRecord, by_variant
from playground.outputs.fmt import METRIC_LABELS
from playground.server.series import Series


def series_figure(series: Series | None, timed: Sequence[RequestRecord],
                  metric: str = "visible_wait_ms") -> go.Figure | None:
    """None when there is nothing to draw (no sample of the server)."""
    if series is None or not series.samples:
        return None
    same_clock = [r for r in timed if r.clock_origin is None and r.raw.t_send is not None]
    t0 = min([s.t for s in series.samples] + [r.raw.t_send or 0.0 for r in same_clock])

    def x(ts: Sequence[float]) -> list[float]:
        return [round(t - t0, 3) for t in ts]

    data: list[dict[str, Any]] = []
    for name, mine in by_variant(same_clock).items():
        dots = [(r.raw.t_send or 0.0, getattr(r.metrics, metric)) for r in mine]
        dots = [(t, v) for t, v in dots if v is not None]
        data.append({"type": "scatter", "mode": "markers", "name": name, "yaxis": "y",
                     "x": x([t for t, _ in dots]), "y": [v for _, v in dots],
                     "legendgroup": "requests"})
    ts = x([s.t for s in series.samples])
    for field, label, dash in (("running", "running (server)", "solid"),
                               ("waiting", "waiting (server)", "dot")):
        data.append({"type": "scatter", "mode": "lines", "name": label, "yaxis": "y2",
                     "x": ts, "y": [getattr(s, field) for s in series.samples],
                     "line": {"shape": "hv", "dash": dash}})
    kv = [(s.t, s.kv_usage) for s in series.samples if s.kv_usage is not None]
    if kv:
        data.append({"type": "scatter", "mode": "lines", "name": "KV cache used %",
                     "yaxis": "y3", "x": x([t for t, _ in kv]),
                     "y": [round(100 * v, 2) for _, v in kv], "line": {"color": "#9e9e9e"}})
    for g in sorted({s.gpu for s in series.gpu}):
        util = [(s.t, s.util_pct) for s in series.gpu if s.gpu == g and s.util_pct is not None]
        data.append({"type": "scatter", "mode": "lines", "name": f"GPU {g} utilisation %",
                     "yaxis": "y3", "x": x([t for t, _ in util]), "y": [u for _, u in util]})
    left_out = len(timed) - len(same_clock)
    title = (f"{METRIC_LABELS[metric]} of each request at its send time (ms, top), and what "
             "the server was doing (bottom)")
    if left_out:
        title += f" -- {left_out} rows read by reader processes are not drawn"
    if series.gpu_note:
        title += f" -- {series.gpu_note}"
    return go.Figure({"data": data, "layout": {
        "title": {"text": title, "font": {"size": 13}}, "height": 520,
        "xaxis": {"title": {"text": "seconds since the first timed request or sample"},
                  "anchor": "y2"},
        "yaxis": {"domain": [0.55, 1.0], "title": {"text": "ms"}, "rangemode": "tozero"},
        "yaxis2": {"domain": [0.0, 0.45], "title": {"text": "requests"},
                   "rangemode": "tozero"},
        "yaxis3": {"overlaying": "y2", "side": "right", "range": [0, 100],
                   "title": {"text": "%"}, "showgrid": False},
        "legend": {"orientation": "h", "y": -0.15}}}, _validate=False)

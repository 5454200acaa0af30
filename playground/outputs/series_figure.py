"""PURE: what the server was doing, on the requests' time axis (plotly, no gradio).

Top: each timed request's wait (first visible character by default) at the moment it was sent,
one colour per variant. Bottom, on the same seconds: the server's running and waiting requests
(its /metrics gauges), its KV-cache usage and each GPU's utilisation. So "TTFT rose here
because 40 requests were waiting" is seen, not inferred.

The sampler and the readers read one clock (time.perf_counter: the machine's monotonic clock;
a Ray reader's stamps are moved onto it), so their times line up as stored. Rows on another
clock (server/series.same_clock: imported, or from before clock origins were kept) are left out
of the top panel, and its title says how many.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from playground.core.record import RequestRecord, by_variant
from playground.core.sweep_doc import SweepDoc, SweepLevel
from playground.outputs.fmt import METRIC_LABELS
from playground.server.series import Series, same_clock


def series_figure(series: Series | None, timed: Sequence[RequestRecord],
                  metric: str = "visible_wait_ms") -> go.Figure | None:
    """None when there is nothing to draw (no sample of the server)."""
    if series is None or not series.samples:
        return None
    drawn = [r for r in timed if r.raw.t_send is not None and same_clock(series, r.clock_origin)]
    t0 = min([s.t for s in series.samples] + [r.raw.t_send or 0.0 for r in drawn])

    def x(ts: Sequence[float]) -> list[float]:
        return [round(t - t0, 3) for t in ts]

    data: list[dict[str, Any]] = []
    for name, mine in by_variant(drawn).items():
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
    left_out = len(timed) - len(drawn)
    title = (f"{METRIC_LABELS[metric]} of each request at its send time (ms, top), and what "
             "the server was doing (bottom)")
    if left_out:
        title += f" -- {left_out} rows on another clock are not drawn"
    if series.gpu_note:
        title += f" -- {series.gpu_note}"
    return _two_panels(data, title, "seconds since the first timed request or sample")


def _two_panels(data: list[dict[str, Any]], title: str, x_title: str,
                shapes: Sequence[dict[str, Any]] = ()) -> go.Figure:
    """Milliseconds above; requests (left) and percent (right) below, on one time axis."""
    return go.Figure({"data": data, "layout": {
        "title": {"text": title, "font": {"size": 13}}, "height": 520, "shapes": list(shapes),
        "xaxis": {"title": {"text": x_title}, "anchor": "y2"},
        "yaxis": {"domain": [0.55, 1.0], "title": {"text": "ms"}, "rangemode": "tozero"},
        "yaxis2": {"domain": [0.0, 0.45], "title": {"text": "requests"},
                   "rangemode": "tozero"},
        "yaxis3": {"overlaying": "y2", "side": "right", "range": [0, 100],
                   "title": {"text": "%"}, "showgrid": False},
        "legend": {"orientation": "h", "y": -0.15}}}, _validate=False)


def levels_figure(levels: Sequence[tuple[str, Series]], doc: SweepDoc) -> go.Figure | None:
    """A sweep's server series, level after level on one time axis (the sampler's clock):
    top, each level's TTFT p50 and p99 drawn across the seconds it ran; bottom, the server's
    running and waiting requests, KV-cache usage and GPU utilisation. So a level whose TTFT
    rose is seen beside the queue that grew. None when no level has a sample."""
    drawn = [(name, s) for name, s in levels if s.samples]
    if not drawn:
        return None
    t0 = min(s.samples[0].t for _, s in drawn)
    stats = {_level_name(lv): lv for lv in doc.levels}
    data: list[dict[str, Any]] = []
    shapes: list[dict[str, Any]] = []
    for i, (name, s) in enumerate(drawn):
        ts = [round(x.t - t0, 3) for x in s.samples]
        lv = stats.get(name)
        for q, color in (("p50", "#1f77b4"), ("p99", "#d62728")):
            v = None if lv is None else lv.ttft_p50_ms if q == "p50" else lv.ttft_p99_ms
            if v is not None:
                data.append({"type": "scatter", "mode": "lines", "x": [ts[0], ts[-1]],
                             "y": [v, v], "yaxis": "y", "name": f"TTFT {q}",
                             "legendgroup": f"ttft-{q}", "showlegend": i == 0,
                             "line": {"color": color}, "hovertext": name})
        for field, color, dash in (("running", "#4c78a8", "solid"),
                                   ("waiting", "#e45756", "dot")):
            data.append({"type": "scatter", "mode": "lines", "x": ts, "yaxis": "y2",
                         "y": [getattr(x, field) for x in s.samples],
                         "name": f"{field} (server)", "legendgroup": field,
                         "showlegend": i == 0, "line": {"shape": "hv", "dash": dash,
                                                        "color": color}})
        kv = [(round(x.t - t0, 3), round(100 * x.kv_usage, 2)) for x in s.samples
              if x.kv_usage is not None]
        if kv:
            data.append({"type": "scatter", "mode": "lines", "yaxis": "y3",
                         "x": [t for t, _ in kv], "y": [v for _, v in kv],
                         "name": "KV cache used %", "legendgroup": "kv", "showlegend": i == 0,
                         "line": {"color": "#9e9e9e"}})
        for g in sorted({x.gpu for x in s.gpu}):
            util = [(round(x.t - t0, 3), x.util_pct) for x in s.gpu
                    if x.gpu == g and x.util_pct is not None]
            data.append({"type": "scatter", "mode": "lines", "yaxis": "y3",
                         "x": [t for t, _ in util], "y": [u for _, u in util],
                         "name": f"GPU {g} utilisation %", "legendgroup": f"gpu{g}",
                         "showlegend": i == 0})
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": ts[0],
                       "x1": ts[-1], "y0": 0, "y1": 1, "fillcolor": "#f2f2f2",
                       "opacity": 0.5 if i % 2 else 0.0, "line": {"width": 0},
                       "layer": "below", "label": {"text": name, "textposition": "top center"}})
    return _two_panels(data, "Each level's TTFT (top, ms) and what the server was doing "
                       "(bottom)", "seconds since the sweep's first sample", shapes)


def _level_name(level: SweepLevel) -> str:
    """The tag cli/sweep gives a level's samples ("c8", "rate 5")."""
    rate = level.rate_per_s
    if rate is not None:
        return f"rate {rate:g}" if isinstance(rate, int | float) else f"rate {rate}"
    return f"c{level.concurrency}"

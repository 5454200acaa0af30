"""PURE: the ladder's plotly figure (no gradio import). The live views of a run are SVG
(outputs/live_svg): a plotly figure in a Gradio component makes every later message of the
page slower (docs/playground.md, "Live means live").

Figures are built from plain dicts without plotly's validation (`_validate=False`) and
without a named template (validation plus template expansion cost ~40 ms per figure).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import plotly.graph_objects as go

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


def ladder(rows: Sequence[Any]) -> go.Figure:
    """A waterfall of the first visible character: the first measured step, then what each
    step saved (down) or cost (up); beside it, where each step's time went (stacked phases)."""
    measured = [r for r in rows if r.visible_ms is not None]
    if not measured:
        return _figure([], "ladder: no step measured yet")
    x = [r.label for r in measured]
    y = [measured[0].visible_ms] + [r.visible_ms - p.visible_ms
                                    for p, r in pairwise(measured)]
    traces: list[dict[str, Any]] = [{
        "type": "waterfall", "x": x, "y": y, "xaxis": "x", "yaxis": "y",
        "measure": ["absolute"] + ["relative"] * (len(y) - 1), "name": "first visible char",
        "text": [f"{v:,.0f} ms" for v in y], "textposition": "outside",
        "decreasing": {"marker": {"color": "#54A24B"}},
        "increasing": {"marker": {"color": "#E45756"}},
        "totals": {"marker": {"color": "#4C78A8"}}, "connector": {"line": {"color": "#999"}},
    }]
    names = [n for r in measured for n, _ in r.phases]
    colors = ["#9ecae9", "#4C78A8", "#bab0ac", "#B279A2", "#F58518", "#79706e"]
    for k, phase in enumerate(dict.fromkeys(names)):
        traces.append({"type": "bar", "name": phase, "x": x, "xaxis": "x2", "yaxis": "y2",
                       "y": [dict(r.phases).get(phase, 0.0) for r in measured],
                       "marker": {"color": colors[k % len(colors)]}})
    return _figure(traces, "what each step saved (left) · where its time went (right)",
                   barmode="stack", height=380,
                   xaxis={**_AXIS, "domain": [0, 0.48]},
                   yaxis={**_AXIS, "title": {"text": "first visible character (ms)"}},
                   xaxis2={**_AXIS, "domain": [0.55, 1], "anchor": "y2"},
                   yaxis2={**_AXIS, "anchor": "x2", "title": {"text": "E2E by phase (ms)"}})

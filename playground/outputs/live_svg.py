"""PURE: the live token timeline as one small SVG string (no plotly while a run streams).

One row per column: a bar from send to the last token (or to now while it runs), a tick at
every token's arrival, the first token marked with its TTFT. A few kB however long the run is
(ticks are merged per horizontal pixel), so the browser redraws it in well under a frame; the
full plotly figures come once, when the run ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from playground.core.runner import Recording

WIDTH = 1000
LABEL_W = 170
ROW_H = 26
TOP = 22
COLORS = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"]


def nice_span(ms: float, least: float = 100.0) -> float:
    """The axis end: the next 1-2-5 step above `ms` (at least `least`, 100 ms by default)."""
    step = least
    while step < ms:
        for f in (2, 2.5, 2):
            step *= f
            if step >= ms:
                break
    return step


def _x(t_ms: float, span: float) -> float:
    return LABEL_W + (WIDTH - LABEL_W - 10) * min(t_ms, span) / span


def live_timeline(recs: Sequence[Recording], now: float) -> str:
    sends = [r.raw.t_send for r in recs if r.raw.t_send is not None]
    if not sends:
        return ""
    t0 = min(sends)
    ends = []
    for r in recs:
        end = r.raw.t_last if r.finished and r.raw.t_last is not None else (
            now if r.raw.t_send is not None else None)
        if end is not None:
            ends.append(end)
    span = nice_span(max(ends, default=t0) * 1000 - t0 * 1000)
    height = TOP + ROW_H * len(recs) + 6
    out = [f'<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
           f'aria-label="live token timeline" font-family="sans-serif" font-size="12">']
    for k in range(0, 6):  # grid + axis labels
        x = _x(span * k / 5, span)
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{height - 4}" '
                   f'stroke="#ddd"/><text x="{x:.1f}" y="{TOP - 8}" text-anchor="middle" '
                   f'fill="#666">{span * k / 5:.0f} ms</text>')
    for i, r in enumerate(recs):
        y = TOP + ROW_H * i
        color = COLORS[i % len(COLORS)]
        name = escape(r.variant.name[:24])
        out.append(f'<text x="4" y="{y + 16}" fill="{color}">{i + 1}. {name}</text>')
        if r.raw.t_send is None:
            continue
        start = r.raw.t_send * 1000 - t0 * 1000
        end_t = r.raw.t_last if r.finished and r.raw.t_last is not None else max(
            now, r.raw.token_times[-1] if r.raw.token_times else now)
        end = end_t * 1000 - t0 * 1000
        x0, x1 = _x(start, span), _x(end, span)
        out.append(f'<rect x="{x0:.1f}" y="{y + 9}" width="{max(x1 - x0, 1):.1f}" height="6" '
                   f'fill="{color}" opacity="0.25"/>')
        pixels = sorted({round(_x(t * 1000 - t0 * 1000, span)) for t in r.raw.token_times})
        if pixels:
            d = "".join(f"M{p} {y + 5}v14" for p in pixels)
            out.append(f'<path d="{d}" stroke="{color}" stroke-width="1"/>')
        first = r.raw.t_first_token
        if first is not None:
            ttft = first * 1000 - r.raw.t_send * 1000
            xf = _x(first * 1000 - t0 * 1000, span)
            out.append(f'<circle cx="{xf:.1f}" cy="{y + 12}" r="4" fill="{color}"/>'
                       f'<text x="{xf + 6:.1f}" y="{y + 8}" fill="{color}">TTFT '
                       f'{ttft:.0f} ms</text>')
        if r.finished and r.raw.t_last is not None:
            out.append(f'<text x="{min(x1 + 4, WIDTH - 60):.1f}" y="{y + 16}" fill="#333">'
                       f'{end - start:.0f} ms</text>')
    out.append("</svg>")
    return "".join(out)


def latency_bars(recs: Sequence[Recording]) -> str:
    """TTFT, TTFA and E2E of each column as horizontal bars (drawn when the run ends)."""
    rows = []
    for r in recs:
        m = r.metrics()
        rows.append((r.variant.name, [("TTFT", m.ttft_ms), ("TTFA", m.ttfa_ms),
                                      ("E2E", m.e2e_ms)]))
    values = [v for _, ms in rows for _, v in ms if v is not None]
    if not values:
        return ""
    span = nice_span(max(values))
    bar_h, gap = 9, 10
    row_h = 3 * bar_h + gap
    height = TOP + row_h * len(rows) + 4
    shades = {"TTFT": 1.0, "TTFA": 0.65, "E2E": 0.35}
    out = [f'<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
           f'aria-label="latency bars" font-family="sans-serif" font-size="11">']
    for k in range(0, 6):
        x = _x(span * k / 5, span)
        out.append(f'<line x1="{x:.1f}" y1="{TOP - 4}" x2="{x:.1f}" y2="{height - 2}" '
                   f'stroke="#ddd"/><text x="{x:.1f}" y="{TOP - 8}" text-anchor="middle" '
                   f'fill="#666">{span * k / 5:.0f} ms</text>')
    for i, (name, parts) in enumerate(rows):
        y = TOP + row_h * i
        color = COLORS[i % len(COLORS)]
        out.append(f'<text x="4" y="{y + 16}" fill="{color}" font-size="12">{i + 1}. '
                   f'{escape(name[:24])}</text>')
        for j, (label, value) in enumerate(parts):
            yy = y + j * bar_h
            if value is None:
                out.append(f'<text x="{LABEL_W + 4}" y="{yy + 8}" fill="#999">{label} '
                           'n/a</text>')
                continue
            x1 = _x(value, span)
            out.append(f'<rect x="{LABEL_W}" y="{yy}" width="{max(x1 - LABEL_W, 1):.1f}" '
                       f'height="{bar_h - 1}" fill="{color}" opacity="{shades[label]}"/>'
                       f'<text x="{min(x1 + 4, WIDTH - 90):.1f}" y="{yy + 8}" fill="#333">'
                       f'{label} {value:,.0f} ms</text>')
    out.append("</svg>")
    return "".join(out)


def history(rows: Sequence[dict]) -> str:
    """This session's runs: E2E (line) and TTFT (dots) of each variant, run after run."""
    if not rows:
        return ""
    names = list(dict.fromkeys(str(r["variant"]) for r in rows))
    runs = max(int(r["run"]) for r in rows)
    values = [v for r in rows for v in (r.get("e2e_ms"), r.get("ttft_ms")) if v is not None]
    if not values:
        return ""
    span = nice_span(max(values))
    height, left, right, top, bottom = 240, 60, 20, 20, 50
    w = WIDTH - left - right

    def xy(run: int, v: float) -> tuple[float, float]:
        x = left + (w * (run - 1) / max(runs - 1, 1))
        return x, top + (height - top - bottom) * (1 - min(v, span) / span)

    out = [f'<svg viewBox="0 0 {WIDTH} {height}" width="100%" role="img" '
           f'aria-label="session history" font-family="sans-serif" font-size="11">']
    for k in range(0, 6):
        _, y = xy(1, span * k / 5)
        out.append(f'<line x1="{left}" y1="{y:.1f}" x2="{WIDTH - right}" y2="{y:.1f}" '
                   f'stroke="#eee"/><text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" '
                   f'fill="#666">{span * k / 5:.0f} ms</text>')
    for i, name in enumerate(names):
        color = COLORS[i % len(COLORS)]
        mine = [r for r in rows if str(r["variant"]) == name]
        pts = [xy(int(r["run"]), r["e2e_ms"]) for r in mine if r.get("e2e_ms") is not None]
        if len(pts) > 1:
            d = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            out.append(f'<polyline points="{d}" fill="none" stroke="{color}"/>')
        for x, y in pts:
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{color}"/>')
        for r in mine:
            if r.get("ttft_ms") is not None:
                x, y = xy(int(r["run"]), r["ttft_ms"])
                out.append(f'<rect x="{x - 3:.1f}" y="{y - 3:.1f}" width="6" height="6" '
                           f'fill="none" stroke="{color}"/>')
        out.append(f'<text x="{left + 150 * i}" y="{height - 8}" fill="{color}">● '
                   f'{escape(name[:20])}</text>')
    out.append(f'<text x="{WIDTH - right}" y="{height - 26}" text-anchor="end" fill="#666">'
               f'run 1..{runs} · ● E2E · □ TTFT</text></svg>')
    return "".join(out)

"""PURE: the "why" views over finished requests (run records): median phases per variant, the
three TTFT definitions side by side, SLO goodput, and the thinking x guided-JSON grid.

- Definitions: `vllm bench serve` times TTFT at the first SSE chunk (vLLM's role-only chunk
  arrives with the first token, other servers may send it earlier); GuideLLM at the first
  generated token (reasoning or content); TTFA is the first *answer* token. Same requests,
  three numbers.
- Goodput: the share of requests meeting every objective. The TTFT objective applies to the
  first visible character (TTFT when streaming, E2E when not: a non-streaming user waits for
  the whole answer); failed requests never meet an objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from playground.core.metrics import median
from playground.core.phases import PHASE_COLORS, breakdown

DEFINITIONS = {"first_chunk_ms": "first SSE chunk (vllm bench serve)",
               "ttft_ms": "first token (GuideLLM, this tool's TTFT)",
               "ttfa_ms": "first answer token (TTFA)"}


def _by_variant(rows: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["variant"]["name"], []).append(r)
    return out


def median_phases(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per variant: the median of each phase over its successful requests."""
    out = {}
    for name, mine in _by_variant(rows).items():
        parts: dict[str, list[float]] = {}
        for r in mine:
            if r.get("error") is not None:
                continue
            b = breakdown(r["raw"], r["metrics"]["e2e_ms"], r["metrics"]["ttft_ms"])
            for phase, ms in b.parts if b else []:
                parts.setdefault(phase, []).append(ms)
        out[name] = {phase: median(v) for phase, v in parts.items()}
    return out


def phase_figure(phases: dict[str, dict[str, float | None]]) -> go.Figure:
    names = list(phases)
    order = [p for p in PHASE_COLORS if any(p in phases[n] for n in names)]
    traces = [{"type": "bar", "orientation": "h", "name": p, "y": names,
               "x": [phases[n].get(p) or 0 for n in names],
               "marker": {"color": PHASE_COLORS[p]}} for p in order]
    return go.Figure({"data": traces, "layout": {
        "title": {"text": "Where the time went (median per phase, ms; transport + client = "
                          "E2E minus the server's parts)"},
        "barmode": "stack", "height": 140 + 40 * max(1, len(names)),
        "xaxis": {"title": {"text": "ms"}}, "margin": {"l": 140}}}, _validate=False)


def definitions(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per variant: the median of each TTFT definition over the same requests."""
    out = {}
    for name, mine in _by_variant(rows).items():
        ok = [r for r in mine if r.get("error") is None]
        out[name] = {k: median([v for v in (r["metrics"].get(k) for r in ok) if v is not None])
                     for k in DEFINITIONS}
    return out


def goodput(rows: Sequence[dict[str, Any]], ttft_slo_ms: float | None,
            e2e_slo_ms: float | None) -> dict[str, float | None]:
    """Per variant: % of requests meeting all objectives (None objectives are ignored)."""
    out: dict[str, float | None] = {}
    for name, mine in _by_variant(rows).items():
        if not mine:
            out[name] = None
            continue
        good = 0
        for r in mine:
            m = r["metrics"]
            if r.get("error") is not None or m["e2e_ms"] is None:
                continue
            wait = m["ttft_ms"] if m["ttft_ms"] is not None else m["e2e_ms"]
            if ttft_slo_ms is not None and wait > ttft_slo_ms:
                continue
            if e2e_slo_ms is not None and m["e2e_ms"] > e2e_slo_ms:
                continue
            good += 1
        out[name] = 100 * good / len(mine)
    return out


def thinking_cut_off(r: dict[str, Any]) -> bool:
    """Thinking ran into max_tokens: no answer text, or `<think>` text leaking into it."""
    content = r.get("content") or ""
    thinking = bool(r["variant"].get("thinking"))
    return thinking and (not content.strip() or "<think>" in content or "</think>" in content)


def grid(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The thinking x guided-JSON grid: one cell per (thinking, guided) combination found."""
    cells: dict[tuple[bool, bool], list[dict[str, Any]]] = {}
    for r in rows:
        key = (bool(r["variant"].get("thinking")), bool(r["variant"].get("guided_json")))
        cells.setdefault(key, []).append(r)
    e2e_free = {}
    out = []
    for (thinking, guided), mine in sorted(cells.items()):
        ok = [r for r in mine if r.get("error") is None]
        scored = [r.get("score") or {} for r in ok]
        cell = {
            "thinking": thinking, "guided_json": guided, "n": len(mine),
            "failed": len(mine) - len(ok),
            "json_valid_pct": _pct([bool(s.get("json_valid")) for s in scored]),
            "schema_valid_pct": _pct([bool(s.get("schema_valid")) for s in scored
                                      if s.get("schema_valid") is not None]),
            "ttfa_ms": median([v for v in (r["metrics"]["ttfa_ms"] for r in ok)
                               if v is not None]),
            "e2e_ms": median([v for v in (r["metrics"]["e2e_ms"] for r in ok) if v is not None]),
            "tpot_ms": median([v for v in (r["metrics"]["tpot_ms"] for r in ok)
                               if v is not None]),
            "cut_off": sum(thinking_cut_off(r) for r in ok),
        }
        if not guided:
            e2e_free[thinking] = cell["tpot_ms"]
        out.append(cell)
    for cell in out:  # guided-decoding overhead: TPOT vs the free cell with the same thinking
        free = e2e_free.get(cell["thinking"])
        cell["guided_overhead_tpot_ms"] = (
            None if not cell["guided_json"] or free is None or cell["tpot_ms"] is None
            else cell["tpot_ms"] - free)
    return out


def _pct(flags: Sequence[bool]) -> float | None:
    return 100 * sum(flags) / len(flags) if flags else None


GRID_HEADERS = ["thinking", "guided JSON", "n", "failed", "JSON valid", "schema valid",
                "TTFA p50", "E2E p50", "TPOT p50", "guided overhead (TPOT)",
                "thinking cut off"]


def grid_rows(cells: Sequence[dict[str, Any]]) -> list[list[str]]:
    def ms(v: float | None) -> str:
        return "n/a" if v is None else f"{v:,.1f} ms" if abs(v) < 100 else f"{v:,.0f} ms"

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}%"

    return [["on" if c["thinking"] else "off", "on" if c["guided_json"] else "off",
             str(c["n"]), str(c["failed"]), pct(c["json_valid_pct"]),
             pct(c["schema_valid_pct"]), ms(c["ttfa_ms"]), ms(c["e2e_ms"]), ms(c["tpot_ms"]),
             "-" if c["guided_overhead_tpot_ms"] is None else
             f"{c['guided_overhead_tpot_ms']:+.2f} ms/token",
             f"{c['cut_off']}/{c['n'] - c['failed']}" if c["thinking"] else "-"]
            for c in cells]


def tpot_floor_figure(rows: Sequence[dict[str, Any]], floor_ms: float | None) -> go.Figure:
    """TPOT per variant (every request a dot) with the physical floor as a line."""
    by = _by_variant(rows)
    traces: list[dict[str, Any]] = [
        {"type": "box", "name": n, "boxpoints": "all", "jitter": 0.4, "pointpos": 0,
         "y": [r["metrics"]["tpot_ms"] for r in mine if r.get("error") is None
               and r["metrics"]["tpot_ms"] is not None]} for n, mine in by.items()]
    shapes = []
    title = "TPOT per variant (ms)"
    if floor_ms:
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": floor_ms,
                       "y1": floor_ms, "line": {"dash": "dash", "color": "#000"}})
        title += f" -- dashed: physical floor {floor_ms:.3f} ms/token"
    return go.Figure({"data": traces, "layout": {
        "title": {"text": title}, "shapes": shapes, "showlegend": False, "height": 360,
        "yaxis": {"title": {"text": "ms"}, "rangemode": "tozero"}}}, _validate=False)

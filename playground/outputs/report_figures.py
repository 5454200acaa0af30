"""PURE: plotly figures of finished runs and boards (no gradio): every request a dot, phases,
TPOT against the physical floor, accuracy, and the claims board's ours-vs-claimed view.

Inputs are typed records (for per-request dots) and the summary / board documents.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go

from playground.core.phases import PHASES
from playground.core.record import RequestRecord, by_variant, values
from playground.core.results import RunSummary
from playground.outputs.fmt import METRIC_LABELS, verdict_color

PHASE_COLORS = {"queue": "#9e9e9e", "prefill": "#f58518", "wait for first token": "#f58518",
                "thinking": "#b279a2", "answer": "#4c78a8", "transport + client": "#54a24b"}
assert set(PHASE_COLORS) == set(PHASES)


def _fig(data: list[dict[str, Any]], layout: dict[str, Any]) -> go.Figure:
    return go.Figure({"data": data, "layout": layout}, _validate=False)


def _dots(name: str, ys: list[float]) -> dict[str, Any]:
    return {"type": "box", "name": name, "y": ys, "boxpoints": "all", "jitter": 0.4,
            "pointpos": 0}


def box_plot(timed: Sequence[RequestRecord], metric: str) -> go.Figure:
    traces = [_dots(n, values(mine, metric)) for n, mine in by_variant(timed).items()]
    return _fig(traces, {
        "title": {"text": f"{METRIC_LABELS[metric]} per variant (ms; every request is a dot)"},
        "yaxis": {"title": {"text": "ms"}, "rangemode": "tozero"}, "height": 360,
        "showlegend": False})


def tpot_floor_figure(timed: Sequence[RequestRecord], floor_ms: float | None) -> go.Figure:
    """TPOT per variant (every request a dot) with the physical floor as a line."""
    traces = [_dots(n, values(mine, "tpot_ms")) for n, mine in by_variant(timed).items()]
    shapes = []
    title = "TPOT per variant (ms)"
    if floor_ms:
        shapes.append({"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": floor_ms,
                       "y1": floor_ms, "line": {"dash": "dash", "color": "#000"}})
        title += f" -- dashed: physical floor {floor_ms:.3f} ms/token"
    return _fig(traces, {"title": {"text": title}, "shapes": shapes, "showlegend": False,
                         "height": 360, "yaxis": {"title": {"text": "ms"}, "rangemode": "tozero"}})


def accuracy_plot(summary: RunSummary) -> go.Figure:
    names = list(summary.variants)
    traces = [{"type": "bar", "name": label, "x": names,
               "y": [getattr(summary.variants[n], key) for n in names]}
              for key, label in (("json_valid_pct", "JSON valid %"),
                                 ("schema_valid_pct", "schema valid %"),
                                 ("field_exact_pct", "field exact-match %"))]
    return _fig(traces, {"title": {"text": "Accuracy per variant"}, "barmode": "group",
                         "height": 360, "yaxis": {"range": [0, 105], "title": {"text": "%"}}})


def phase_figure(phases: dict[str, dict[str, float | None]]) -> go.Figure:
    names = list(phases)
    order = [p for p in PHASES if any(p in phases[n] for n in names)]
    traces = [{"type": "bar", "orientation": "h", "name": p, "y": names,
               "x": [phases[n].get(p) or 0 for n in names],
               "marker": {"color": PHASE_COLORS[p]}} for p in order]
    return _fig(traces, {
        "title": {"text": "Where the time went (median per phase, ms; transport + client = "
                          "E2E minus the server's parts)"},
        "barmode": "stack", "height": 140 + 40 * max(1, len(names)),
        "xaxis": {"title": {"text": "ms"}}, "margin": {"l": 140}})


def primary_check(claim: dict[str, Any]) -> dict[str, Any] | None:
    judged = [x for x in claim["checks"] if x["direction"] != "report"]
    return judged[0] if judged else (claim["checks"][0] if claim["checks"] else None)


def verdict_figure(board: dict[str, Any]) -> go.Figure:
    """Ours vs the article's claimed change, per judged claim (bars; error bar = 95% CI)."""
    names, ours, lo, hi, claimed, colors = [], [], [], [], [], []
    for c in board["claims"]:
        p = primary_check(c)
        if (c["status"] != "done" or p is None or p["change"] is None or p["unit"] != "%"
                or p["verdict"] == "not measurable on the demo model"):
            continue
        names.append(c["id"])
        ours.append(p["change"])
        ci = p["change_ci"] or (p["change"], p["change"])  # too few samples: no interval
        lo.append(p["change"] - ci[0])
        hi.append(ci[1] - p["change"])
        claimed.append(p["claimed_change_pct"])
        colors.append(verdict_color(c["verdict"]))
    data = [{"type": "bar", "orientation": "h", "name": "ours (95% CI)", "y": names, "x": ours,
             "marker": {"color": colors}, "error_x": {"type": "data", "array": hi,
                                                      "arrayminus": lo}},
            {"type": "scatter", "mode": "markers", "name": "article's claim", "y": names,
             "x": claimed, "marker": {"symbol": "diamond", "size": 12, "color": "#f58518"}}]
    return _fig(data, {
        "title": {"text": "Change of the median, after vs before (%): ours vs the article's"},
        "xaxis": {"title": {"text": "% change (negative = faster)"}, "zeroline": True},
        "height": 120 + 40 * max(1, len(names)), "margin": {"l": 120}})


def claim_figure(claim: dict[str, Any]) -> go.Figure | None:
    """Every sample of the claim's checks: box per side for times, bars for rates."""
    checks = [x for x in claim.get("checks", []) if x["values_baseline"] or x["values_variant"]]
    if not checks:
        return None
    base, var = claim.get("baseline") or "before", claim.get("variant") or "after"
    data: list[dict[str, Any]] = []
    layout: dict[str, Any] = {"title": {"text": claim["title"]}, "height": 340,
                              "grid": {"rows": 1, "columns": len(checks),
                                       "pattern": "independent"}}
    for k, x in enumerate(checks):
        axis = "" if k == 0 else str(k + 1)
        where = {"xaxis": f"x{axis}", "yaxis": f"y{axis}", "showlegend": False}
        if x["unit"] == "pp":
            data.append({"type": "bar", "x": [base, var], "y": [x["baseline_value"],
                         x["variant_value"]], "name": x["label"], **where})
        else:
            data += [{**_dots(side, vals), **where} for side, vals in
                     ((base, x["values_baseline"]), (var, x["values_variant"]))]
        unit = "%" if x["unit"] == "pp" else "ms"
        layout[f"yaxis{axis}"] = {"title": {"text": f"{x['label']} ({unit})"},
                                  "rangemode": "tozero"}
    return _fig(data, layout)

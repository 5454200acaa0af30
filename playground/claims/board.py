"""The claims board: run every claim (and the API-statement checks), then the board document
(JSON), its Markdown and the stakeholder report (one offline HTML file, plotly inlined).

The board document is built from results alone (each check keeps its samples), so the report
and the UI's plots can be redrawn from `claims.json` without the run history.
"""

from __future__ import annotations

import asyncio
import html
import json
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.offline

from playground.claims.api_checks import run_api_checks
from playground.claims.run import Claim, ClaimResult, run_claim
from playground.core.client import fetch_server_info
from playground.core.compare import resolve_model
from playground.server import machine
from playground.server.demo_model import is_demo_dir
from playground.settings import Settings
from playground.specs.presets import PresetLibrary

FORMAT = "qwen-latency-lab/claims-board"
VERSION = 1
VERDICT_COLORS = {"confirmed": "#2e7d32", "refuted": "#c62828",
                  "no detectable difference": "#6d6d6d", "not measurable": "#9e9e9e",
                  "reported": "#1565c0", "not run": "#9e9e9e"}


@dataclass
class BoardEvent:
    kind: str  # "claim-started" | "progress" | "claim-done" | "api-checks" | "finished"
    claim: str = ""
    index: int = 0
    total: int = 0
    done: int = 0
    requests: int = 0
    result: ClaimResult | None = None
    board: dict[str, Any] = field(default_factory=dict)


def environment(settings: Settings, server_note: str = "") -> dict[str, Any]:
    env: dict[str, Any] = {"base_url": settings.base_url, "machine": machine.describe(),
                           "server_flags": server_note or "not known (server not started by "
                           "this command)", "measured_at": time.strftime("%Y-%m-%d %H:%M %Z")}
    try:
        info = fetch_server_info(settings.base_url, settings.api_key_value())
        env.update(vllm_version=info.version, models=[m.id for m in info.models],
                   demo_model=any(is_demo_dir(m.root) for m in info.models))
    except Exception as e:  # the environment is metadata: a failure is stated, not raised
        env.update(vllm_version=None, models=[], demo_model=None, server_error=str(e))
    return env


async def run_board(settings: Settings, claims: Sequence[Claim], library: PresetLibrary, *,
                    with_servers: bool = False, api_checks: bool = True,
                    examples: int | None = None, repetitions: int | None = None,
                    server_note: str = "") -> AsyncIterator[BoardEvent]:
    """Claims one after another (each interleaves its own variants), then the API checks."""
    env = await asyncio.to_thread(environment, settings, server_note)
    results: list[ClaimResult] = []
    total = len(claims)
    for i, claim in enumerate(claims):
        yield BoardEvent("claim-started", claim.id, i, total)
        async for ev in run_claim(settings, claim, library, with_servers=with_servers,
                                  examples=examples, repetitions=repetitions):
            if ev.kind == "progress":
                yield BoardEvent("progress", claim.id, i, total, ev.done, ev.total)
            elif ev.result is not None:
                results.append(ev.result)
                yield BoardEvent("claim-done", claim.id, i + 1, total, result=ev.result)
    checks: list[dict[str, Any]] = []
    if api_checks:
        try:
            model, _ = await asyncio.to_thread(resolve_model, settings)
            found = await asyncio.to_thread(run_api_checks, settings.base_url,
                                            settings.api_key_value(), model,
                                            vllm_python=settings.server_python())
            checks = [c.as_dict() for c in found]
        except Exception as e:  # reported on the board, never raised
            checks = [{"id": "api-checks", "article": "", "statement": "API checks",
                       "outcome": "could not check", "evidence": str(e), "instead": ""}]
        yield BoardEvent("api-checks", total=total)
    board = {"format": FORMAT, "version": VERSION, "environment": env,
             "claims": [r.as_dict() for r in results], "api_checks": checks,
             "options": {"with_servers": with_servers, "examples": examples,
                         "repetitions": repetitions}}
    yield BoardEvent("finished", index=total, total=total, board=board)


# --- rows, Markdown --------------------------------------------------------------------------

BOARD_HEADERS = ["claim", "article", "article's number", "ours (median, 95% CI)", "verdict",
                 "other checks"]


def _primary(c: dict[str, Any]) -> dict[str, Any] | None:
    judged = [x for x in c["checks"] if x["direction"] != "report"]
    return judged[0] if judged else (c["checks"][0] if c["checks"] else None)


def _ours(x: dict[str, Any] | None) -> str:
    if x is None or x["change"] is None:
        return "-"
    lo, hi = x["change_ci"]
    unit = x["unit"]
    if unit == "pp":
        return (f"{x['baseline_value']:.0f}% -> {x['variant_value']:.0f}% "
                f"({x['change']:+.0f} pp [{lo:+.0f}, {hi:+.0f}])")
    return (f"{x['baseline_value']:,.0f} -> {x['variant_value']:,.0f} ms "
            f"({x['change']:+.0f}% [{lo:+.0f}, {hi:+.0f}])")


def board_rows(board: dict[str, Any]) -> list[list[str]]:
    rows = []
    for c in board["claims"]:
        p = _primary(c)
        if c["status"] != "done":
            verdict = f"not run: {c['reason']}" if c["status"] == "skipped" else (
                f"failed: {c['reason']}")
            rows.append([c["title"], c["article"], p["claimed"] if p else "", "-", verdict, ""])
            continue
        others = "; ".join(f"{x['label']}: {x['verdict']}" if x["direction"] != "report"
                           else f"{x['label']}: {_ours(x)}" for x in c["checks"] if x is not p)
        rows.append([c["title"], c["article"], p["claimed"] if p else "",
                     f"{p['label']}: {_ours(p)}" if p else "-", c["verdict"], others])
    return rows


def env_lines(board: dict[str, Any]) -> list[str]:
    env = board["environment"]
    m = env["machine"]
    demo = env.get("demo_model")
    model = ", ".join(env.get("models") or []) or "?"
    lines = [f"Accelerator: {m['accelerator']}", f"CPU: {m['cpu']} ({m['cores']} cores, "
             f"{m['memory_gib']} GiB)", f"vLLM: {env.get('vllm_version') or '?'} at "
             f"{env['base_url']}", f"Model: {model}" + (
                 " -- the OFFLINE DEMO MODEL: Qwen3 architecture, random weights; its text "
                 "is meaningless (accuracy says nothing about Qwen3), its timings are the "
                 "architecture's" if demo else ""),
             f"Server flags: {env['server_flags']}", f"Measured: {env['measured_at']}"]
    return lines


METHOD = ("Each claim is an experiment: the article's 'before' and 'after' variants, sent "
          "interleaved (A B A B, rotated per example) with a cold prefix cache (a unique first "
          "line per request), after untimed warm-up requests. Times are client-side "
          "(MEASUREMENT.md): TTFT = first generated token, first visible character = TTFT "
          "when streaming and E2E when not. We compare medians: the change is the median of "
          "'after' relative to 'before', with a 95% bootstrap confidence interval. A claim is "
          "confirmed when the change goes the claimed way and its CI excludes zero, refuted "
          "when it goes the other way and its CI excludes zero, and otherwise there is no "
          "detectable difference. Rates (valid JSON, accuracy) are compared in percentage "
          "points. The article's own number is shown next to ours: it was measured on other "
          "hardware and is context, not a target.")


def markdown(board: dict[str, Any]) -> str:
    out = ["# Claims board -- qwen-latency-lab", ""]
    out += [f"- {line}" for line in env_lines(board)]
    out += ["", "| " + " | ".join(BOARD_HEADERS) + " |",
            "|" + "---|" * len(BOARD_HEADERS)]
    for row in board_rows(board):
        out.append("| " + " | ".join(cell.replace("|", "/") for cell in row) + " |")
    if board["api_checks"]:
        out += ["", "## API statements, tried on the live server", "",
                "| statement (article) | outcome | evidence | what works |", "|---|---|---|---|"]
        for a in board["api_checks"]:
            out.append(f"| {a['statement']} ({a['article']}) | {a['outcome']} | "
                       f"{a['evidence'].replace('|', '/')} | {a['instead']} |")
    out += ["", "## Method", "", METHOD, ""]
    for c in board["claims"]:
        if c["status"] == "done":
            out += [f"### {c['title']}", "", f"> {c['quote']} ({c['article']})", "",
                    *[f"- {x['verdict']}: {x['text']}" for x in c["checks"]],
                    f"- {c['n_requests']} timed requests, {c['n_failed']} failed, "
                    f"{c['wall_s']:.0f} s", "", c["note"], ""]
    return "\n".join(out)


# --- figures ----------------------------------------------------------------------------------


def verdict_figure(board: dict[str, Any]) -> go.Figure:
    """Ours vs the article's claimed change, per judged claim (bars; error bar = 95% CI)."""
    names, ours, lo, hi, claimed, colors = [], [], [], [], [], []
    for c in board["claims"]:
        p = _primary(c)
        if c["status"] != "done" or p is None or p["change"] is None or p["unit"] != "%":
            continue
        names.append(c["id"])
        ours.append(p["change"])
        lo.append(p["change"] - p["change_ci"][0])
        hi.append(p["change_ci"][1] - p["change"])
        claimed.append(p["claimed_change_pct"])
        colors.append(VERDICT_COLORS.get(c["verdict"], "#888"))
    data = [{"type": "bar", "orientation": "h", "name": "ours (95% CI)", "y": names, "x": ours,
             "marker": {"color": colors}, "error_x": {"type": "data", "array": hi,
                                                      "arrayminus": lo}},
            {"type": "scatter", "mode": "markers", "name": "article's claim", "y": names,
             "x": claimed, "marker": {"symbol": "diamond", "size": 12, "color": "#f58518"}}]
    return go.Figure({"data": data, "layout": {
        "title": {"text": "Change of the median, after vs before (%): ours vs the article's"},
        "xaxis": {"title": {"text": "% change (negative = faster)"}, "zeroline": True},
        "height": 120 + 40 * max(1, len(names)), "margin": {"l": 120}}}, _validate=False)


def claim_figure(claim: dict[str, Any]) -> go.Figure | None:
    """Every sample of the claim's checks: box per side for times, bars for rates."""
    checks = [x for x in claim.get("checks", []) if x["values_baseline"] or x["values_variant"]]
    if not checks:
        return None
    base, var = claim.get("baseline") or "before", claim.get("variant") or "after"
    data = []
    for k, x in enumerate(checks):
        axis = "" if k == 0 else str(k + 1)
        if x["unit"] == "pp":
            data.append({"type": "bar", "x": [base, var], "y": [x["baseline_value"],
                         x["variant_value"]], "name": x["label"], "xaxis": f"x{axis}",
                         "yaxis": f"y{axis}", "showlegend": False})
        else:
            for side, vals in ((base, x["values_baseline"]), (var, x["values_variant"])):
                data.append({"type": "box", "name": side, "y": vals, "boxpoints": "all",
                             "jitter": 0.4, "pointpos": 0, "xaxis": f"x{axis}",
                             "yaxis": f"y{axis}", "showlegend": False})
    n = len(checks)
    layout: dict[str, Any] = {"title": {"text": claim["title"]}, "height": 340,
                              "grid": {"rows": 1, "columns": n, "pattern": "independent"},
                              "annotations": []}
    for k, x in enumerate(checks):
        axis = "" if k == 0 else str(k + 1)
        unit = "%" if x["unit"] == "pp" else "ms"
        layout[f"yaxis{axis}"] = {"title": {"text": f"{x['label']} ({unit})"},
                                  "rangemode": "tozero"}
    return go.Figure({"data": data, "layout": layout}, _validate=False)


# --- the stakeholder report ------------------------------------------------------------------


def html_report(board: dict[str, Any]) -> str:
    def esc(x: object) -> str:
        return html.escape(str(x))

    def div(fig: go.Figure) -> str:
        return plotly.offline.plot(fig, output_type="div", include_plotlyjs=False)

    head = "".join(f"<th>{esc(h)}</th>" for h in BOARD_HEADERS)
    rows = ""
    for row in board_rows(board):
        color = VERDICT_COLORS.get(row[4], "#333")
        cells = [f"<td>{esc(c)}</td>" for c in row]
        cells[4] = f"<td style='color:{color};font-weight:600'>{esc(row[4])}</td>"
        rows += "<tr>" + "".join(cells) + "</tr>"
    api_rows = "".join(
        f"<tr><td>{esc(a['statement'])} ({esc(a['article'])})</td><td><b>{esc(a['outcome'])}"
        f"</b></td><td>{esc(a['evidence'])}</td><td><code>{esc(a['instead'])}</code></td></tr>"
        for a in board["api_checks"])
    details = ""
    for c in board["claims"]:
        if c["status"] != "done":
            continue
        fig = claim_figure(c)
        items = "".join(f"<li><b>{esc(x['verdict'])}</b>: {esc(x['text'])}</li>"
                        for x in c["checks"])
        details += (f"<h3 id='claim-{esc(c['id'])}'>{esc(c['title'])}</h3><blockquote>"
                    f"{esc(c['quote'])} ({esc(c['article'])})</blockquote><ul>{items}</ul>"
                    f"<p>{esc(c['note'])} {c['n_requests']} timed requests, {c['n_failed']} "
                    f"failed.</p>" + (div(fig) if fig else ""))
    env = "".join(f"<li>{esc(line)}</li>" for line in env_lines(board))
    demo = ("<p class='warn'>These numbers come from the OFFLINE DEMO MODEL (random weights): "
            "timings are real for the architecture and this machine; generated text and "
            "accuracy are not.</p>" if board["environment"].get("demo_model") else "")
    api = (f"<h2>API statements, tried on the live server</h2><table><tr><th>statement "
           f"(article)</th><th>outcome</th><th>evidence</th><th>what works</th></tr>{api_rows}"
           "</table>" if api_rows else "")
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>Claims board -- qwen-latency-lab</title>
<script>{plotly.offline.get_plotlyjs()}</script>
<style>body{{font-family:sans-serif;max-width:1150px;margin:auto;padding:0 12px}}
table{{border-collapse:collapse;width:100%}}td,th{{border:1px solid #ccc;padding:4px 8px;
vertical-align:top}}.warn{{background:#fff4e5;padding:8px}}blockquote{{color:#555}}</style>
</head><body>
<h1>What the articles claimed, and what it really does here</h1>
{demo}<h2>Environment</h2><ul>{env}</ul>
<h2>The board</h2><table id="board"><tr>{head}</tr>{rows}</table>
{div(verdict_figure(board))}
{api}
<h2>Method, in plain words</h2><p>{esc(METHOD)}</p>
<h2>Each claim</h2>{details}
</body></html>"""


def write_board(board: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "claims.json", "md": out_dir / "claims.md",
             "html": out_dir / "claims-report.html"}
    paths["json"].write_text(json.dumps(board, ensure_ascii=False, indent=1, default=str),
                             "utf-8")
    paths["md"].write_text(markdown(board), "utf-8")
    paths["html"].write_text(html_report(board), "utf-8")
    return paths

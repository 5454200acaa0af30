"""A finished (or stopped) benchmark -> summary, comparisons, figures and files.

Works from the run's JSONL records alone, without knowing how they were measured: CSV (one
row per timed request), JSON (summary + every request) and one self-contained HTML file
(plotly JS inlined, opens offline).
"""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
import plotly.offline

from playground.core.metrics import median
from playground.lab import insight
from playground.lab.stats import METRICS, compare_medians, describe

CSV_FIELDS = ["trial", "variant", "example", "repetition", "status", "error", "ttft_ms",
              "ttfa_ms", "visible_wait_ms", "e2e_ms", "tpot_ms", "decode_tok_s",
              "prompt_tokens", "completion_tokens", "finish_reason", "json_valid",
              "schema_valid", "field_accuracy"]


def split(records: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    meta = next((r for r in records if r.get("kind") == "meta"), {})
    timed = [r for r in records if r.get("kind") == "request" and r.get("phase") == "timed"]
    return meta, timed


def visible_wait(r: dict[str, Any]) -> float | None:
    m = r["metrics"]
    return m["ttft_ms"] if m["ttft_ms"] is not None else m["e2e_ms"]


def metric_values(rows: Sequence[dict[str, Any]], metric: str) -> list[float]:
    ok = [r for r in rows if r["error"] is None]
    vals = [visible_wait(r) if metric == "visible_wait_ms" else r["metrics"].get(metric)
            for r in ok]
    return [v for v in vals if v is not None]


def summarize_run(records: Sequence[dict[str, Any]], *, ttft_slo_ms: float | None = None,
                  e2e_slo_ms: float | None = None) -> dict[str, Any]:
    meta, timed = split(records)
    background = next((r for r in records if r.get("kind") == "background"), None)
    exp = meta.get("experiment", {})
    names = [v["name"] for v in exp.get("variants", [])] or sorted({r["variant"]["name"]
                                                                     for r in timed})
    baseline = exp.get("baseline") or (names[0] if names else None)
    by = {n: [r for r in timed if r["variant"]["name"] == n] for n in names}
    variants = {}
    for n, rows in by.items():
        scored = [r["score"] for r in rows if r.get("score")]
        acc = [s["field_accuracy"] for s in scored if s["field_accuracy"] is not None]
        variants[n] = {
            "n": len(rows), "failed": sum(r["error"] is not None for r in rows),
            "metrics": {m: _md(describe(metric_values(rows, m))) for m in METRICS},
            "json_valid_pct": _pct([s["json_valid"] for s in scored]),
            "schema_valid_pct": _pct([s["schema_valid"] for s in scored
                                      if s["schema_valid"] is not None]),
            "field_exact_pct": 100 * sum(acc) / len(acc) if acc else None,
            "server": server_share(rows),
        }
    comparisons = []
    for n in names:
        if n == baseline:
            continue
        for m in ("visible_wait_ms", "e2e_ms", "ttft_ms"):
            if m == "ttft_ms" and not (metric_values(by[baseline], m)
                                       and metric_values(by[n], m)):
                continue  # TTFT is not observable for a non-streaming side
            c = compare_medians(metric_values(by[baseline], m), metric_values(by[n], m),
                                metric=m, names=(baseline, n))
            comparisons.append(asdict(c))
    return {"meta": meta, "baseline": baseline, "variants": variants,
            "comparisons": comparisons, "n_requests": len(timed),
            "n_failed": sum(r["error"] is not None for r in timed),
            "phases": insight.median_phases(timed), "definitions": insight.definitions(timed),
            "slo": {"ttft_ms": ttft_slo_ms, "e2e_ms": e2e_slo_ms},
            "goodput_pct": insight.goodput(timed, ttft_slo_ms, e2e_slo_ms),
            "grid": insight.grid(timed) if is_grid(timed) else None,
            "floor_ms": meta.get("floor_ms"), "background": background}


def is_grid(timed: Sequence[dict[str, Any]]) -> bool:
    """Both thinking settings and both guided-JSON settings among the variants."""
    keys = {(bool(r["variant"].get("thinking")), bool(r["variant"].get("guided_json")))
            for r in timed}
    return len(keys) == 4


def server_share(rows: Sequence[dict[str, Any]]) -> dict[str, float | None]:
    """Medians of the server's per-request metrics and of the rest of the client's E2E."""
    queue, gen, rest = [], [], []
    for r in rows:
        sm = r["raw"].get("server_metrics") or {}
        e2e = r["metrics"]["e2e_ms"]
        if r["error"] is None and e2e is not None and "queue_time_ms" in sm and (
                "generation_time_ms" in sm):
            queue.append(sm["queue_time_ms"])
            gen.append(sm["generation_time_ms"])
            rest.append(e2e - sm["queue_time_ms"] - sm["generation_time_ms"])
    return {"queue_ms": median(queue), "generation_ms": median(gen), "rest_ms": median(rest)}


def _md(ms: Any) -> dict[str, Any]:
    return {**asdict(ms.summary), "median_ci": ms.median_ci}


def _pct(flags: Sequence[bool]) -> float | None:
    return 100 * sum(flags) / len(flags) if flags else None


# --- figures -------------------------------------------------------------------------------


def box_plot(timed: Sequence[dict[str, Any]], metric: str) -> go.Figure:
    names = sorted({r["variant"]["name"] for r in timed}, key=lambda n: [
        r["variant"]["name"] for r in timed].index(n))
    traces = [{"type": "box", "name": n, "y": metric_values(
        [r for r in timed if r["variant"]["name"] == n], metric), "boxpoints": "all",
        "jitter": 0.4, "pointpos": 0} for n in names]
    return go.Figure({"data": traces, "layout": {
        "title": {"text": f"{METRICS[metric]} per variant (ms; every request is a dot)"},
        "yaxis": {"title": {"text": "ms"}, "rangemode": "tozero"}, "height": 360,
        "showlegend": False}}, _validate=False)


def accuracy_plot(summary: dict[str, Any]) -> go.Figure:
    names = list(summary["variants"])
    traces = [{"type": "bar", "name": label, "x": names,
               "y": [summary["variants"][n][key] for n in names]}
              for key, label in (("json_valid_pct", "JSON valid %"),
                                 ("schema_valid_pct", "schema valid %"),
                                 ("field_exact_pct", "field exact-match %"))]
    return go.Figure({"data": traces, "layout": {
        "title": {"text": "Accuracy per variant"}, "barmode": "group", "height": 360,
        "yaxis": {"range": [0, 105], "title": {"text": "%"}}}}, _validate=False)


def summary_rows(summary: dict[str, Any]) -> list[list[Any]]:
    rows = []
    for n, v in summary["variants"].items():
        def cell(m: str, v: dict[str, Any] = v) -> str:
            s = v["metrics"][m]
            if not s["n"]:
                return "n/a"
            ci = s["median_ci"]
            ci_txt = f" [{ci[0]:.0f}-{ci[1]:.0f}]" if ci else ""
            return f"{s['p50']:.0f}{ci_txt} / {s['p95']:.0f}"
        srv = v.get("server") or {}
        server = ("-" if srv.get("generation_ms") is None else
                  f"{srv['queue_ms']:.0f} / {srv['generation_ms']:.0f} / {srv['rest_ms']:.0f}")
        rows.append([n, v["n"], v["failed"], cell("ttft_ms"), cell("visible_wait_ms"),
                     cell("e2e_ms"), server, _fmt_pct(v["json_valid_pct"]),
                     _fmt_pct(v["schema_valid_pct"]), _fmt_pct(v["field_exact_pct"])])
    return rows


SUMMARY_HEADERS = ["variant", "n", "failed", "TTFT p50 [95% CI] / p95",
                   "first char p50 [CI] / p95", "E2E p50 [CI] / p95",
                   "server queue / generation / rest p50", "JSON valid",
                   "schema valid", "fields exact"]


def _fmt_pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}%"


# --- files ---------------------------------------------------------------------------------


def csv_rows(timed: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in timed:
        m, s = r["metrics"], r.get("score") or {}
        out.append({
            "trial": r["trial"], "variant": r["variant"]["name"], "example": r["example"],
            "repetition": r["repetition"], "status": r["status"],
            "error": (r["error"] or {}).get("message"), "ttft_ms": m["ttft_ms"],
            "ttfa_ms": m["ttfa_ms"], "visible_wait_ms": visible_wait(r),
            "e2e_ms": m["e2e_ms"], "tpot_ms": m["tpot_ms"], "decode_tok_s": m["decode_tok_s"],
            "prompt_tokens": m["prompt_tokens"], "completion_tokens": m["completion_tokens"],
            "finish_reason": r["raw"]["finish_reason"], "json_valid": s.get("json_valid"),
            "schema_valid": s.get("schema_valid"), "field_accuracy": s.get("field_accuracy"),
        })
    return out


def write_outputs(records: Sequence[dict[str, Any]], out_dir: Path, *,
                  ttft_slo_ms: float | None = None, e2e_slo_ms: float | None = None
                  ) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize_run(records, ttft_slo_ms=ttft_slo_ms, e2e_slo_ms=e2e_slo_ms)
    _, timed = split(records)
    paths = {"csv": out_dir / "requests.csv", "json": out_dir / "results.json",
             "html": out_dir / "report.html"}
    with paths["csv"].open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(csv_rows(timed))
    paths["json"].write_text(json.dumps({"summary": summary, "requests": timed},
                                        ensure_ascii=False, indent=1, default=str), "utf-8")
    paths["html"].write_text(html_report(summary, timed), "utf-8")
    return paths


def html_report(summary: dict[str, Any], timed: Sequence[dict[str, Any]]) -> str:
    meta = summary["meta"]
    exp = meta.get("experiment", {})
    figs = [box_plot(timed, "visible_wait_ms"), box_plot(timed, "ttft_ms"),
            box_plot(timed, "e2e_ms"), insight.phase_figure(summary["phases"]),
            insight.tpot_floor_figure(timed, summary["floor_ms"]), accuracy_plot(summary)]
    divs = "\n".join(plotly.offline.plot(f, output_type="div", include_plotlyjs=False)
                     for f in figs)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in SUMMARY_HEADERS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>"
                   for row in summary_rows(summary))
    verdicts = "".join(f"<li>{html.escape(c['verdict'])}</li>" for c in summary["comparisons"])
    demo = ("<p class='warn'>Served by the OFFLINE DEMO MODEL (random weights): its text is "
            "meaningless, so accuracy numbers say nothing about Qwen3; its timings are the "
            "architecture's real timings.</p>" if meta.get("demo_model") else "")
    env = html.escape(json.dumps({k: meta.get(k) for k in (
        "model", "base_url", "vllm_version", "machine", "demo_model")}, ensure_ascii=False))
    method = (f"{exp.get('repetitions')} repetition(s) over {exp.get('examples') or 'all'} "
              f"example(s) of data set '{exp.get('dataset')}', {exp.get('warmup')} untimed "
              f"warm-up request(s) per variant, order {exp.get('order')}, concurrency "
              f"{exp.get('concurrency')}, cache policy {exp.get('cache')} "
              "(cold = a unique first line per request, so no prefix-cache hits). Medians "
              "with bootstrap 95% CIs; a difference is called only when its CI excludes 0.")
    return f"""<!doctype html><html><head><meta charset="utf-8">
<title>{html.escape(exp.get('name', 'benchmark'))} -- qwen-latency-lab</title>
<script>{plotly.offline.get_plotlyjs()}</script>
<style>body{{font-family:sans-serif;max-width:1100px;margin:auto}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px}}.warn{{background:#fff4e5;padding:8px}}</style>
</head><body>
<h1>{html.escape(exp.get('name', 'benchmark'))}</h1><p>{html.escape(exp.get('description', ''))}</p>
{demo}
<h2>Verdicts (baseline: {html.escape(str(summary['baseline']))})</h2><ul>{verdicts}</ul>
<h2>Summary (ms)</h2><table><tr>{head}</tr>{body}</table>
<p>{summary['n_requests']} timed requests, {summary['n_failed']} failed.</p>
{divs}
{insight_html(summary)}
<h2>Method</h2><p>{html.escape(method)}</p><h2>Environment</h2><pre>{env}</pre>
</body></html>"""


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _ms(v: float | None) -> str:
    return "n/a" if v is None else f"{v:,.0f}"


def insight_rows(summary: dict[str, Any]) -> dict[str, list[list[str]]]:
    """The report's extra tables as rows: TTFT definitions, goodput, floor."""
    defs = [[n, *[_ms(d[k]) for k in insight.DEFINITIONS]]
            for n, d in summary["definitions"].items()]
    good = [[n, "-" if v is None else f"{v:.0f}%"] for n, v in summary["goodput_pct"].items()]
    floor = summary["floor_ms"]
    tpots = [[n, _ms(v["metrics"]["tpot_ms"]["p50"]) if v["metrics"]["tpot_ms"]["n"] else "n/a",
              "n/a" if not floor or not v["metrics"]["tpot_ms"]["n"] else
              f"{v['metrics']['tpot_ms']['p50'] / floor:.1f}x"]
             for n, v in summary["variants"].items()]
    return {"definitions": defs, "goodput": good, "floor": tpots}


def insight_html(summary: dict[str, Any]) -> str:
    rows = insight_rows(summary)
    slo = summary["slo"]
    objectives = ", ".join(f"{k.removesuffix('_ms').upper()} <= {v:,.0f} ms"
                           for k, v in slo.items() if v is not None) or "none set"
    floor = summary["floor_ms"]
    floor_txt = (f"Physical floor: {floor:.3f} ms per decode step at batch 1 (weight bytes / "
                 "memory bandwidth; KV-cache reads, activations and launch overheads ignored; "
                 "see playground/floor.py)." if floor else
                 "Physical floor: unknown (the accelerator of a remote server is not known; "
                 "set PLAYGROUND_ACCELERATOR).")
    bg = summary.get("background")
    load = (f"<p>Probe under load: {bg['requests_in_flight']} background requests kept in "
            f"flight ({bg['max_tokens']} tokens each, {bg['completed']} completed) during the "
            "timed trials.</p>" if bg and bg.get("requests_in_flight") else "")
    grid = summary.get("grid")
    grid_html = ("<h2>Thinking x guided JSON</h2>" + _table(insight.GRID_HEADERS,
                 insight.grid_rows(grid)) + "<p>Thinking cut off = no answer text, or "
                 "&lt;think&gt; text in the answer: thinking ran into max_tokens.</p>"
                 if grid else "")
    return ("<h2>Why tools disagree: three TTFT definitions (p50 ms, same requests)</h2>"
            + _table(["variant", *insight.DEFINITIONS.values()], rows["definitions"])
            + f"<h2>SLO goodput ({html.escape(objectives)})</h2>"
            + _table(["variant", "requests meeting all objectives"], rows["goodput"])
            + "<h2>Distance from the hardware's limit</h2>"
            + _table(["variant", "TPOT p50 (ms)", "x above the floor"], rows["floor"])
            + f"<p>{html.escape(floor_txt)}</p>{load}{grid_html}")

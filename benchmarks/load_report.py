"""The load path's published results, regenerated from the committed raw data (run HERE).

    python benchmarks/load_report.py docs/results/h200/load [--docs]
    python benchmarks/load_report.py docs/results/cpu/load --docs

Reads a results folder -- fidelity.json + fidelity-requests.csv[.gz] (benchmarks/fidelity.py),
client-profile*.json (benchmarks/client_profile.py), sweep.json + sweep-requests.csv[.gz]
(`playground sweep`), optionally bench-sweep.json and probe-under-load.json -- and writes its
README.md and load.png. Every latency percentile is recomputed from the per-request rows by
lab/stats (via lab/fidelity and lab/sweep); throughput is completed requests / the reader's wall
time per block, from the JSON. The recomputed levels are written back into fidelity.json and
sweep.json, so they hold what the README shows. `--docs` also rewrites the folder's block in
docs/load.md.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playground.lab.fidelity import KEYS, REFERENCE, level  # noqa: E402
from playground.lab.sweep import WRITTEN, read_rows, summarise  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
LABELS = {"vllm-bench": "vllm bench serve", "load-path": "load path (raw reader)",
          "openai-sdk": "openai SDK, one process", "playground": "load path",
          "sweep": "playground sweep"}
NAMES = {"ttft_p50_ms": "TTFT p50", "ttft_p99_ms": "TTFT p99", "tpot_p50_ms": "TPOT p50",
         "tpot_p99_ms": "TPOT p99", "itl_p50_ms": "ITL p50", "itl_p99_ms": "ITL p99",
         "req_per_s": "req/s"}


def load(p: Path) -> Any:
    return json.loads(p.read_text("utf-8")) if p.is_file() else None


def csv_of(folder: Path, stem: str) -> Path | None:
    for name in (f"{stem}.csv.gz", f"{stem}.csv"):
        if (folder / name).is_file():
            return folder / name
    return None


def walls(block_summaries: list[dict[str, Any]]) -> list[float]:
    """Each block's wall time back from its completed count and throughput."""
    return [(b["n"] - b["failed"]) / b["req_per_s"] if b.get("req_per_s") else 0.0
            for b in block_summaries]


def published(folder: Path, stem: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A summary JSON and its per-request rows; ({}, []) when either is missing. The JSON says
    how its vllm bench rows were written ("vllm_bench_rows", lab/sweep.WRITTEN)."""
    doc, path = load(folder / f"{stem}.json"), csv_of(folder, f"{stem}-requests")
    if not doc or path is None:
        return {}, []
    if "vllm_bench_rows" not in doc:
        raise SystemExit(f"{folder / stem}.json: no \"vllm_bench_rows\" -- say how its vllm "
                         f"bench rows were written: one of {', '.join(WRITTEN)}")
    return doc, read_rows(path, doc["vllm_bench_rows"])


def write_back(folder: Path, fid: list[dict[str, Any]], sw: list[dict[str, Any]]) -> None:
    """fidelity.json and sweep.json hold what the README shows: their levels as recomputed
    from the rows (the sweep's server-side TTFT column has no rows: it is kept)."""
    doc = load(folder / "fidelity.json")
    if doc and fid:
        doc["levels"] = fid
        (folder / "fidelity.json").write_text(json.dumps(doc, indent=1), "utf-8")
    doc = load(folder / "sweep.json")
    if doc and sw:
        for lv, new in zip(doc["levels"], sw, strict=True):
            lv.update({k: v for k, v in new.items() if k != "ttft_minus_server_ttft_p50_ms"})
        (folder / "sweep.json").write_text(json.dumps(doc, indent=1), "utf-8")


def fidelity(folder: Path) -> list[dict[str, Any]]:
    """The fidelity levels recomputed from the per-request rows."""
    doc, rows = published(folder, "fidelity")
    out = []
    for lv in doc.get("levels", []):
        c = lv["concurrency"]
        tools = lv.get("tools") or doc["tools"]
        blocks = {}
        for t in tools:
            ws = walls(lv[f"{t}_blocks"]) if f"{t}_blocks" in lv else []
            nblk = len(ws) or 1
            blocks[t] = [([r for r in rows if r["concurrency"] == c and r["tool"] == t
                           and r["block"] == b], ws[b] if ws else 0.0) for b in range(nblk)]
        out.append(level(c, blocks, n_per_block=lv["n_per_block"],
                         load_path_workers=lv["load_path_workers"]))
    return out


def sweep(folder: Path) -> list[dict[str, Any]]:
    doc, rows = published(folder, "sweep")
    out = []
    for lv in doc.get("levels", []):
        c = lv["concurrency"]
        mine = [r for r in rows if r["concurrency"] == c]
        wall = (lv["n"] - lv["failed"]) / lv["req_per_s"] if lv.get("req_per_s") else 0.0
        out.append({"concurrency": c, "engine": lv["engine"], "workers": lv.get("workers"),
                    **summarise(mine, [wall])})
    return out


def _n(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:,.{nd}f}"


def table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    return (["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
            + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def fidelity_md(levels: list[dict[str, Any]], doc: dict[str, Any], brief: bool = False
                ) -> list[str]:
    if not levels:
        return []
    lines = [f"Fidelity ({doc.get('date', '?')}; {doc.get('machine', '?')}; vLLM "
             f"{doc.get('vllm', '?')}; {doc.get('output_len')} output tokens, ignore_eos; "
             f"{doc.get('blocks')} blocks per reader and concurrency, rotated; a block is "
             f"{doc.get('waves', 2)} x the concurrency requests). Ratios are reader / vllm "
             "bench: of the pooled rows (a description), and paired block by block with its "
             "95% interval (a sign-flip test over the pairs, inverted), which alone decides "
             "the verdict: within 5% only when the whole interval is inside 0.95-1.05 (req/s: "
             "at least 0.95), outside only when it is wholly outside, otherwise not resolved "
             f"at this n. {_pairs_note(int(doc.get('blocks') or 0))} "
             "In brackets, how far vllm bench's own blocks land from each other.", ""]
    rows = []
    for lv in levels:
        for t in [t for t in lv["tools"] if t != REFERENCE]:
            for k in KEYS:
                ref, mine = lv[REFERENCE][k], lv[t][k]
                pr = (lv.get(f"{t}_paired") or {}).get(k) or {}
                ci = pr.get("ci95")
                paired = (f"{_n(pr.get('ratio'), 3)} ({_n(ci[0], 2)}-{_n(ci[1], 2)})" if ci
                          else f"{_n(pr.get('ratio'), 3)} (no interval)")
                rows.append([f"c{lv['concurrency']}", LABELS.get(t, t), NAMES[k],
                             _n(ref, 2), _n(mine, 2),
                             f"{_n(lv[f'{t}_vs_vllm_bench'][k], 3)} "
                             f"[{_n((lv['vllm_bench_block_spread'][k] or 0) * 100, 0)}%]",
                             paired, lv[f"{t}_verdicts"][k]])
    full = table(["concurrency", "reader", "number", "vllm bench", "reader",
                  "pooled ratio [A/A]", "paired ratio (95% interval)", "verdict"], rows)
    lines += [] if brief else [*full, ""]
    summary = []
    for lv in levels:
        lp = lv.get("load-path_verdicts", {})
        sdk = lv.get("openai-sdk_vs_vllm_bench", {})
        out = [k for k, v in lp.items() if v == "outside 5%"]
        unres = [k for k, v in lp.items() if v.startswith("not resolved")]
        summary.append([f"c{lv['concurrency']}", lv["load_path_workers"],
                        f"{sum(v == 'within 5%' for v in lp.values())}/{len(lp)}",
                        ", ".join(NAMES[k] for k in unres) or "-",
                        ", ".join(NAMES[k] for k in out) or "-",
                        _n(sdk.get("tpot_p50_ms"), 2), _n(sdk.get("req_per_s"), 2)])
    lines += ["In short (the load path against vllm bench over those seven numbers; the "
              "openai SDK in one process for comparison):", ""]
    lines += table(["concurrency", "reader processes", "within 5%", "not resolved",
                    "outside 5%", "SDK TPOT p50 ratio", "SDK req/s ratio"], summary)
    cells = [(f"c{lv['concurrency']}", LABELS.get(t, t), lv[t])
             for lv in levels for t in lv["tools"]]
    return [*lines, "", *one_chunk_md(cells)]


def _pairs_note(blocks: int) -> str:
    if blocks <= 5:
        return (f"No test over {blocks} pairs can reject anything at 0.05 (the best p is "
                f"2/{2 ** blocks}).")
    return (f"Over {blocks} pairs the best p is 2/{2 ** blocks}: a verdict is possible, and "
            "the interval's width says how much the blocks disagree.")


def server_md(doc: dict[str, Any], folder: Path) -> list[str]:
    """What the server and each GPU did during each level (benchmarks/fidelity.py samples
    /metrics and NVML every --series-interval; every sample is in series-c{N}.jsonl[.gz])."""
    server = doc.get("server") or {}
    if not server:
        return []
    rows = []
    for c, s in sorted(server.items(), key=lambda kv: int(kv[0])):
        kv = s.get("peak_kv_usage")
        hit = s.get("prefix_hit_rate")
        name = next((f.name for f in sorted(folder.glob(f"series-c{c}.jsonl*"))), None)
        rows.append([f"c{c}", s.get("samples", 0), s.get("gaps", 0),
                     _n(s.get("peak_running"), 0), _n(s.get("peak_waiting"), 0),
                     "-" if kv is None else f"{100 * kv:.1f}%",
                     "-" if hit is None else f"{100 * hit:.0f}%",
                     _n(s.get("preemptions"), 0), _n(s.get("generation_tok_per_s"), 0),
                     _n(s.get("peak_gpu_util_pct"), 0), _n(s.get("peak_gpu_mem_used_mib"), 0),
                     _n(s.get("peak_gpu_power_w"), 0), _n(s.get("peak_gpu_sm_clock_mhz"), 0),
                     f"[{name}]({name})" if name else "-"])
    notes = {s.get("gpu_note") for s in server.values() if s.get("gpu_note")}
    return ["What the server and the GPU did meanwhile (its /metrics and NVML, sampled during "
            "each level; peaks over the level; generation tokens per second over the level's "
            "span; a gap is a failed scrape):", "",
            *table(["level", "samples", "gaps", "peak running", "peak waiting", "peak KV",
                    "prefix hits", "preemptions", "gen tok/s", "GPU util % (peak)",
                    "GPU memory MiB (peak)", "power W (peak)", "SM clock MHz (peak)",
                    "every sample"], rows),
            *(["", *sorted(notes)] if notes else [])]


def one_chunk_md(cells: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """Says how many requests got every token in one chunk: their TPOT is 0 and is counted
    (vllm bench's definition), never dropped."""
    merged = [f"{c} {who} {s['one_chunk']:,} of {s['n'] - s['failed']:,}"
              for c, who, s in cells if s.get("one_chunk")]
    head = ("Every vllm bench row's first gap -- vLLM's role-only chunk to the first token, "
            "sent in the same server step -- is moved into its TTFT, so its TTFT and ITL mean "
            "what the load path's do. ")
    if not merged:
        return [head + "No request got all its tokens in one chunk."]
    return [head + "Requests whose tokens all arrived in one chunk (the server merged them; "
            "TPOT 0, counted in the TPOT percentiles as vllm bench counts it): "
            + "; ".join(merged) + "."]


def profile_md(folder: Path) -> list[str]:
    docs = [d for p in sorted(folder.glob("client-profile*.json")) if (d := load(p))]
    if not docs:
        return []
    rows = []
    for d in docs:
        for lv in d["levels"]:
            for client in ("openai", "raw"):
                r = lv[client]
                top = ", ".join(f"{k} {100 * v:.0f}%" for k, v in
                                list(r["profiled"]["own_time_share"].items())[:3])
                rows.append([f"c{lv['concurrency']}", "openai SDK" if client == "openai"
                             else "raw reader", _n(r["cpu_us_per_event"]),
                             f"{100 * r['core_share']:.0f}%", _n(r["tpot_p50_ms"], 2), top])
    lines = ["Where one reader process's time goes (one process, one event loop; CPU time per "
             "event read, the share of one core it used, and cProfile's own-time split):", ""]
    lines += table(["concurrency", "reader", "CPU us / event", "core used", "TPOT p50 (ms)",
                    "largest own-time shares"], rows)
    return lines


def scale_out_md(folder: Path, sw: list[dict[str, Any]]) -> list[str]:
    """What one reader process sustains: the CPU cost per event measured by the profile (at its
    highest concurrency) against the event rate each sweep level produced (concurrency x 1000 /
    its TPOT p50)."""
    docs = [d for p in sorted(folder.glob("client-profile*.json")) if (d := load(p))]
    if not docs or not sw:
        return []
    measured = sorted((lv for d in docs for lv in d["levels"]), key=lambda lv: lv["concurrency"])

    def nearest(c: int) -> dict[str, Any]:  # the profile measured closest to this level
        return min(measured, key=lambda lv: abs(math.log(lv["concurrency"] / c)))

    rows = []
    for s in sw:
        if not s.get("tpot_p50_ms"):
            continue
        prof = nearest(s["concurrency"])
        rate = s["concurrency"] * 1000 / s["tpot_p50_ms"]
        cells = []
        for c in ("openai", "raw"):
            us = prof[c]["cpu_us_per_event"]
            cores = rate * us / 1e6
            cells.append(f"{cores:.2f} / {max(1, math.ceil(cores / 0.5))} ({us:.0f} us)")
        rows.append([f"c{s['concurrency']}", _n(s["tpot_p50_ms"], 2), f"{rate:,.0f}",
                     f"c{prof['concurrency']}", *cells])
    lines = ["What one reader process sustains, as arithmetic: events/s = concurrency x 1000 / "
             "TPOT p50 (the sweep's); cores = events/s x CPU per event (the profile measured "
             "nearest that concurrency; it counts every event, connection set-up included, so "
             "it errs high -- the profile's own \"core used\" is the direct reading); "
             "processes = what keeps each reader under half a core (auto uses one per 32 "
             "streams):", ""]
    return lines + table(["concurrency", "TPOT p50 (ms)", "events/s", "profile at",
                          "openai SDK: cores / processes (CPU per event)",
                          "raw reader: cores / processes (CPU per event)"], rows)


def sweep_md(levels: list[dict[str, Any]], doc: dict[str, Any] | None) -> list[str]:
    if not levels or not doc:
        return []
    lines = [f"`playground sweep` ({doc.get('date')}; {doc.get('output_len')} output tokens, "
             "ignore_eos; each level measured by the load path while it holds on this machine, "
             "by vllm bench serve past that):", ""]
    lines += table(["concurrency", "measured by", "n", "failed", "TTFT p50 / p99 (ms)",
                    "TPOT p50 / p99 (ms)", "ITL p50 / p99 (ms)", "req/s"],
                   [[f"c{s['concurrency']}", (f"load path, {s['workers']} process(es)"
                                              if s["engine"] == "playground"
                                              else "vllm bench serve"),
                     s["n"], s["failed"], f"{_n(s['ttft_p50_ms'])} / {_n(s['ttft_p99_ms'])}",
                     f"{_n(s['tpot_p50_ms'], 2)} / {_n(s['tpot_p99_ms'], 2)}",
                     f"{_n(s['itl_p50_ms'], 2)} / {_n(s['itl_p99_ms'], 2)}",
                     _n(s["req_per_s"])] for s in levels])
    cells = [(f"c{s['concurrency']}", LABELS.get(s["engine"], s["engine"]), s)
             for s in levels]
    return [*lines, "", *one_chunk_md(cells)]


def extra_md(folder: Path) -> list[str]:
    lines: list[str] = []
    bs = load(folder / "bench-sweep.json")
    if bs:
        lines += ["`playground bench` through the load path, `all-optimizations` (the "
                  "address-extraction dataset, guided JSON, fixed length), per-request rows in "
                  "bench-sweep-requests.csv:", ""]
        lines += table(["concurrency", "n", "failed", "TTFT p50 / p95 (ms)",
                        "E2E p50 / p95 (ms)", "TPOT p50 (ms)", "req/s"],
                       [[f"c{s['concurrency']}", s["n"], s["failed"],
                         f"{_n(s['ttft_p50_ms'])} / {_n(s['ttft_p95_ms'])}",
                         f"{_n(s['e2e_p50_ms'])} / {_n(s['e2e_p95_ms'])}",
                         _n(s["tpot_p50_ms"], 2), _n(s["req_per_s"])] for s in bs])
    probe = load(folder / "probe-under-load.json")
    if probe:
        bg = probe["summary"].get("background") or {}
        lines += ["", f"Probe under load: `seed-vs-optimized` with {bg.get('text', '?')}; the "
                  "probe requests are ours (per-request rows in probe-under-load-requests.csv):",
                  ""]
        lines += table(["variant", "n", "failed", "first visible character p50 / p95 (ms)",
                        "E2E p50 / p95 (ms)"],
                       [[name, v["n"], v["failed"],
                         f"{_n(v['metrics']['visible_wait_ms']['p50'])} / "
                         f"{_n(v['metrics']['visible_wait_ms']['p95'])}",
                         f"{_n(v['metrics']['e2e_ms']['p50'])} / "
                         f"{_n(v['metrics']['e2e_ms']['p95'])}"]
                        for name, v in probe["summary"]["variants"].items()])
    return lines


def plot(levels: list[dict[str, Any]], sw: list[dict[str, Any]], out: Path) -> Path | None:
    """TTFT and TPOT p50 against concurrency, every reader, as one PNG (Chromium, offline)."""
    if not levels and not sw:
        return None
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("TTFT p50 (ms)", "TPOT p50 (ms)"))
    tools = [t for t in ("vllm-bench", "load-path", "openai-sdk")
             if any(t in lv for lv in levels)]
    series = [(LABELS[t], [lv["concurrency"] for lv in levels if t in lv],
               [lv[t] for lv in levels if t in lv]) for t in tools]
    if sw:
        series.append(("playground sweep (64 tokens)", [s["concurrency"] for s in sw], sw))
    colors = ("#636efa", "#00cc96", "#ef553b", "#ab63fa")  # one per reader, in both panels
    for i, (name, xs, summaries) in enumerate(series):
        color = colors[i % len(colors)]
        for col, key in ((1, "ttft_p50_ms"), (2, "tpot_p50_ms")):
            fig.add_trace(go.Scatter(x=xs, y=[s[key] for s in summaries], name=name,
                                     mode="lines+markers", legendgroup=name,
                                     line={"color": color}, showlegend=col == 1),
                          row=1, col=col)
    fig.update_xaxes(type="log", title="concurrency")
    fig.update_yaxes(type="log")
    fig.update_layout(width=1100, height=450, margin={"l": 50, "r": 20, "t": 40, "b": 50})
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        page_file = Path(tmp) / "plot.html"
        page_file.write_text(fig.to_html(include_plotlyjs="inline"), "utf-8")
        png = out / "load.png"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1150, "height": 500})
            page.goto(page_file.as_uri())
            page.wait_for_selector(".js-plotly-plot .main-svg")
            page.locator(".js-plotly-plot").first.screenshot(path=str(png))
            browser.close()
    return png


def report(folder: Path, brief: bool = False) -> tuple[list[str], Path | None]:
    """The folder's summary in Markdown (brief: fidelity in short, the sweep, the scale-out;
    no per-number table, no profile) and the plot."""
    fid_doc = load(folder / "fidelity.json") or {}
    levels = fidelity(folder)
    sw = sweep(folder)
    lines = fidelity_md(levels, fid_doc, brief)
    parts = ((sweep_md(sw, load(folder / "sweep.json")),) if brief else
             (server_md(fid_doc, folder), profile_md(folder),
              sweep_md(sw, load(folder / "sweep.json")), scale_out_md(folder, sw),
              extra_md(folder)))
    for part in parts:
        if part:
            lines += ["", *part]
    return lines, plot(levels, sw, folder)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--docs", action="store_true", help="also rewrite this folder's block in "
                    "docs/load.md")
    a = ap.parse_args()
    folder = Path(a.folder)
    lines, png = report(folder)
    write_back(folder, fidelity(folder), sweep(folder))
    head = [f"# Load path results: {folder.parent.name} (generated by "
            "benchmarks/load_report.py)", "", "What each number means: docs/load.md.", ""]
    env = (load(folder / "environment.json") or {}).get("environment")
    if env:  # the device run's machine (benchmarks/gpu/h200.py)
        head += [f"Machine: {env.get('accelerator') or 'no GPU'}; {env.get('cpu')}, "
                 f"{env.get('cores')} cores, {env.get('memory_gib')} GiB; Python "
                 f"{env.get('python')}; vLLM {env.get('vllm_version')}.", ""]
    body = lines + (["", f"![load]({png.name})"] if png else [])
    (folder / "README.md").write_text("\n".join(head + body) + "\n", "utf-8")
    if a.docs:
        name = folder.parent.name
        rel = folder.resolve().relative_to((ROOT / "docs").resolve())
        block = [re.sub(r"\]\(([\w.-]+\.(?:csv|gz|json|png|md))\)", rf"]({rel}/\1)", ln)
                 for ln in body]  # docs/load.md links into the results folder
        doc = ROOT / "docs" / "load.md"
        text = doc.read_text("utf-8")
        start, end = f"<!-- load:{name}:start -->", f"<!-- load:{name}:end -->"
        if start not in text:
            raise SystemExit(f"docs/load.md has no {start} ... {end} block")
        doc.write_text(re.sub(re.escape(start) + ".*?" + re.escape(end),
                              lambda _: "\n".join([start, *block, end]), text, flags=re.S),
                       "utf-8")
    print(f"wrote {folder / 'README.md'}" + (f" and {png}" if png else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Turn what the H200 runs brought back into docs/results/h200/ (run HERE, not on the GPU).

    python benchmarks/gpu/collect.py ARCHIVE_OR_DIR [ARCHIVE_OR_DIR ...] [--out docs/results/h200]

Each argument is an archive written by `h200.py PHASE DIR ARCHIVE.tgz` (or its unpacked
folder). Writes: environment.json, steps.json, the claims board (claims.json / .md /
claims-report.html), fidelity-c1.json, fidelity-c32.json, sweep.json, the grid's and
seed-vs-optimized's summaries (JSON, per-request CSV, the seed-vs-optimized HTML report),
PNGs of every plot in those reports (Chromium screenshots), and README.md: every number in
it is read from those files; `--docs` also rewrites docs/h200.md. The GPU recording goes
to presets/recordings/.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import ladder_report  # noqa: E402  (benchmarks/ladder_report.py)
import load_report  # noqa: E402  (benchmarks/load_report.py)

from playground.claims.board import refamily  # noqa: E402
from playground.core.results import RunSummary  # noqa: E402
from playground.lab.store import Run, RunMeta, parse_line  # noqa: E402
from playground.lab.summary import summarize_run  # noqa: E402
from playground.outputs import html  # noqa: E402
from playground.outputs.board_view import BOARD_HEADERS, board_rows, markdown  # noqa: E402
from playground.outputs.tables import (  # noqa: E402
    GRID_HEADERS,
    SUMMARY_HEADERS,
    grid_rows,
    summary_rows,
    why_rows,
)

CHROMIUM = "/usr/bin/chromium"
RECORDING = ROOT / "presets" / "recordings" / "h200-seed-vs-optimized.json"


def unpack(arg: str, tmp: Path) -> Path:
    p = Path(arg)
    if p.is_dir():
        return p
    with tarfile.open(p) as t:
        t.extractall(tmp, filter="data")
        top = t.getnames()[0].split("/")[0]
    return tmp / top


def load(p: Path) -> Any:
    return json.loads(p.read_text("utf-8")) if p.exists() else None


def screenshots(html: Path, stem: str, out: Path) -> list[Path]:
    """One PNG per plotly plot of a self-contained report, rendered offline in Chromium."""
    from playwright.sync_api import sync_playwright

    pngs: list[Path] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1100, "height": 800})
        page.route("http*://**", lambda route: route.abort())  # offline: nothing to fetch
        page.goto(html.resolve().as_uri())
        page.wait_for_selector(".js-plotly-plot .main-svg")
        for i, plot in enumerate(page.locator(".js-plotly-plot").all(), 1):
            png = out / f"{stem}-plot-{i}.png"
            plot.screenshot(path=str(png))
            pngs.append(png)
        browser.close()
    return pngs


def render_reports(out: Path, tmp: Path) -> list[Path]:
    """The stakeholder reports from the collected JSON (never post-edited HTML): rendered with
    plotly.js inline into `tmp` for the offline screenshots, and committed loading plotly.js
    from its CDN (the PNGs are the offline view; `playground claims --out DIR` writes a
    self-contained report)."""
    pngs: list[Path] = []
    board = load(out / "claims.json")
    if board:
        inline = tmp / "claims-report.html"
        inline.write_text(html.board(board), "utf-8")
        pngs += screenshots(inline, "claims", out)
        (out / "claims-report.html").write_text(html.board(board, plotlyjs="cdn"), "utf-8")
    res = load(out / "seed-vs-optimized-full.json")
    if res:
        run = Run(meta=RunMeta.model_validate(res["summary"]["meta"]))
        for line in res["requests"]:
            run.add(parse_line(line, where="seed-vs-optimized results.json"))
        summary = summarize_run(run, ttft_slo_ms=res["summary"]["slo"]["ttft_ms"],
                                e2e_slo_ms=res["summary"]["slo"]["e2e_ms"])
        inline = tmp / "seed-vs-optimized-report.html"
        inline.write_text(html.report(summary, run.timed), "utf-8")
        pngs += screenshots(inline, "seed-vs-optimized", out)
        (out / "seed-vs-optimized-report.html").write_text(
            html.report(summary, run.timed, plotlyjs="cdn"), "utf-8")
        (out / "seed-vs-optimized-full.json").unlink()
    return pngs


def merge_boards(out: Path) -> None:
    """One board: the claims with runs of their own (the server A/Bs, the engines run) take
    the place of the main board's rows, and Holm is applied over all the checks it shows."""
    board = load(out / "claims.json")
    if not board:
        return
    found: dict[str, Any] = {}
    for b, how in [(load(out / f"claims-{ab}.json"), "server A/B run")
                   for ab in ("eager", "chunked-prefill")] + [
            (load(out / "engines" / "claims-claims.json"), "engines run")]:
        if b:
            found.update({c["id"]: {**c, "title": f"{c['title']} ({how})"}
                          for c in b["claims"] if c["status"] == "done"})
    claims = [found.get(c["id"], c) for c in board["claims"]]  # their own runs decide
    merged = refamily({**board, "claims": claims})
    (out / "claims.json").write_text(json.dumps(merged, indent=1), "utf-8")
    (out / "claims.md").write_text(markdown(merged), "utf-8")


def collect_load(d: Path, dst: Path) -> None:
    """Issue 4/6's files (h200.py `load` and `fidelity` phases) -> docs/results/h200/load/:
    summaries as JSON, per-request rows as CSV (gzip for the two large ones)."""
    import gzip

    def gz(src: Path, name: str) -> None:
        with src.open("rb") as f, gzip.open(dst / name, "wb", compresslevel=9) as g:
            g.write(f.read())

    pairs = [("fidelity/fidelity.json", "fidelity.json"),
             ("profile/client-profile.json", "client-profile.json"),
             ("profile-c256/client-profile.json", "client-profile-c256.json"),
             ("sweep/sweep.json", "sweep.json"), ("bench-sweep.json", "bench-sweep.json")]
    found = [(d / a, b) for a, b in pairs if (d / a).is_file()]
    if not found and not (d / "probe-under-load").is_dir():
        return
    dst.mkdir(parents=True, exist_ok=True)
    for src, name in found:
        shutil.copyfile(src, dst / name)
    for src, name in (("fidelity/fidelity-requests.csv", "fidelity-requests.csv.gz"),
                      ("sweep/sweep-requests.csv", "sweep-requests.csv.gz")):
        if (d / src).is_file():
            gz(d / src, name)
    if (d / "bench-sweep").is_dir():
        rows: list[str] = []
        for f in sorted((d / "bench-sweep").glob("c*/requests.csv"),
                        key=lambda p: int(p.parent.name[1:])):
            text = f.read_text("utf-8").splitlines()
            if not rows:
                rows.append("concurrency," + text[0])
            rows += [f"{f.parent.name[1:]},{ln}" for ln in text[1:]]
        (dst / "bench-sweep-requests.csv").write_text("\n".join(rows) + "\n", "utf-8")
    probe = d / "probe-under-load"
    if (probe / "results.json").is_file():
        (dst / "probe-under-load.json").write_text(
            json.dumps(slim(load(probe / "results.json")), indent=1), "utf-8")
        shutil.copyfile(probe / "requests.csv", dst / "probe-under-load-requests.csv")


LADDER_RECORDING = ROOT / "presets" / "recordings" / "h200-ladder-seed-004.json"


def slim(results: dict[str, Any]) -> dict[str, Any]:
    """A bench results.json without the raw per-token timestamps (requests.csv has them
    per request); the summary is kept whole."""
    return {"summary": results["summary"], "n_requests": len(results.get("requests", []))}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", default=str(ROOT / "docs" / "results" / "h200"))
    ap.add_argument("--docs", action="store_true",
                    help="also rewrite docs/h200.md (between its h200 markers)")
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp())
    dirs = [unpack(x, tmp) for x in a.inputs]

    env: dict[str, Any] = {}
    steps: dict[str, Any] = load(out / "steps.json") or {}  # earlier runs' steps stay
    for d in dirs:
        for f in d.glob("*-environment.json"):
            env = env or load(f)
        for f in d.glob("*-steps.json"):
            data = load(f)
            steps[d.name] = data  # keyed by run folder: two runs may share a phase
        for f in d.glob("steps-so-far.json"):  # a run cut off before it wrote its summary
            steps.setdefault(d.name, {"phase": d.name, "wall_s": None, "steps": load(f)})
    (out / "environment.json").write_text(json.dumps(env, indent=1), "utf-8")
    (out / "steps.json").write_text(json.dumps(steps, indent=1), "utf-8")

    for d in dirs:
        for src, dst in (("claims/claims.json", "claims.json"), ("claims/claims.md", "claims.md"),
                         ("grid/requests.csv", "grid-requests.csv"),
                         ("seed-vs-optimized/requests.csv", "seed-vs-optimized-requests.csv"),
                         ("claims-eager/claims.json", "claims-eager.json"),
                         ("claims-eager/claims.md", "claims-eager.md"),
                         ("claims-chunked-prefill/claims.json", "claims-chunked-prefill.json"),
                         ("claims-chunked-prefill/claims.md", "claims-chunked-prefill.md")):
            if (d / src).exists():
                shutil.copyfile(d / src, out / dst)
        collect_load(d, out / "load")
        ladder_report.collect(d / "engines", out / "engines", LADDER_RECORDING)
        for name in ("grid", "seed-vs-optimized"):
            res = load(d / name / "results.json")
            if res:
                (out / f"{name}.json").write_text(json.dumps(slim(res), indent=1), "utf-8")
                if name == "seed-vs-optimized":
                    (out / f"{name}-full.json").write_text(json.dumps(res), "utf-8")
        for runs, dst in (("claims/runs", "claims-runs"), ("claims-ab-runs", "claims-ab-runs")):
            if (d / runs).is_dir():  # the claims' raw per-request run files
                shutil.rmtree(out / dst, ignore_errors=True)
                shutil.copytree(d / runs, out / dst)
        if (d / "recording.json").exists():
            rec = load(d / "recording.json")
            RECORDING.write_text(json.dumps(rec, indent=1) + "\n", "utf-8")

    merge_boards(out)
    if (out / "load").is_dir():
        lines, _ = load_report.report(out / "load")
        (out / "load" / "README.md").write_text(
            "\n".join(["# Load path results: h200 (generated by benchmarks/gpu/collect.py)",
                       "", *lines, "", "![load](load.png)"]) + "\n", "utf-8")
    pngs = render_reports(out, tmp)

    (out / "README.md").write_text(summary_md(out, env, steps, pngs), "utf-8")
    if a.docs:
        update_readme(readme_block(out, env, steps))
        ladder_report.write_docs()  # docs/servers.md's ladder and engine/LangChain claims
    print(f"wrote {out} ({len(list(out.iterdir()))} files)")
    return 0


def sections(out: Path, env: dict[str, Any], steps: dict[str, Any], pngs: list[Path]
             ) -> dict[str, list[str]]:
    smi = (env.get("nvidia_smi") or "").splitlines()
    driver = next((ln.split("Driver Version:")[1].split()[0] for ln in smi
                   if "Driver Version:" in ln), "?")
    gpus = ", ".join(g.get("name", "?") for g in env.get("gpus", [])) or "?"
    lines = ["# H200 results (generated by benchmarks/gpu/collect.py)", "",
             f"- GPU: {gpus}, driver {driver}; vLLM {env.get('vllm_version')}; "
             f"CPU: {env.get('cpu', '?')}",
             "- Model: the demo model at the real Qwen3-0.6B dimensions (28 layers, hidden "
             "1024, vocab 151,936, bf16) served with `--load-format dummy`: RANDOM weights. "
             "Outputs are gibberish and fixed-length (`ignore_eos` + `max_tokens`) wherever "
             "lengths are compared; timings are the architecture's real timings.",
             "- Server: one managed vLLM with CUDA graphs + torch.compile (vLLM's default), "
             "`--reasoning-parser qwen3`, xgrammar without whitespace, "
             "`--enable-per-request-metrics`, `--max-model-len 4096`, "
             "`--gpu-memory-utilization 0.3` (exact command in steps.json).", ""]
    head, lines = lines, []
    lines += ["## Runs", "", "| run | step | rc | wall (s) |", "|---|---|---|---|"]
    for phase, data in steps.items():
        for s in data["steps"]:
            lines.append(f"| {phase} | {s['step']} | {s['rc']} | {s['wall_s']} |")
        if data.get("wall_s") is not None:
            lines.append(f"| {phase} | **whole run** | | {data['wall_s']} |")
    runs, lines = lines, []
    board = load(out / "claims.json")  # merged with the server A/Bs (merge_boards)
    if board:
        lines += ["", "## Claims board", "", md_table(BOARD_HEADERS, board_rows(board)), "",
                  "Rows marked \"server A/B run\" come from the second command (one Holm family "
                  "with the rest of the board): two managed "
                  "servers (vLLM's default vs the flag), started one after another on the one "
                  "GPU, `--gpu-memory-utilization 0.3` each; their evidence: "
                  "[claims-eager.md](claims-eager.md), "
                  "[claims-chunked-prefill.md](claims-chunked-prefill.md). Rows marked "
                  "\"engines run\" come from the engines command (a Transformers server and a "
                  "vLLM server side by side); their evidence: "
                  "[engines/claims-claims.md](engines/claims-claims.md).", "",
                  "API statements: " + "; ".join(f"{c['statement']} -> **{c['outcome']}**"
                                                 for c in board["api_checks"]),
                  "", "Full board with evidence: [claims.md](claims.md); stakeholder report: "
                  "[claims-report.html](claims-report.html) (its plots load plotly.js from "
                  "cdn.plot.ly; the PNGs below are the offline view)."]
    for ab in ("eager", "chunked-prefill"):
        b = load(out / f"claims-{ab}.json")
        if b and not board:
            lines += ["", f"### Server A/B: {ab}", "", md_table(BOARD_HEADERS, board_rows(b))]
    if (out / "load").is_dir():
        lines += ["", "## Load path vs `vllm bench serve`, and the concurrency sweep", "",
                  "The load path (raw reader, worker processes) and the openai SDK against "
                  "`vllm bench serve` on one server, in one run; then `playground sweep` to "
                  "c1024 (vllm bench serve past what the load path holds here). Every number, "
                  "the profile, the probe under load and the raw per-request data: "
                  "[load/README.md](load/README.md); the method: [load.md](../../load.md).", ""]
        lines += load_report.report(out / "load", brief=True)[0]
    ladder = load(out / "engines" / "ladder" / "ladder.json")
    if ladder:
        st = ladder["settings"]
        lines += ["", "## Seed 004's ladder: Transformers -> vLLM -> short prompt -> guided JSON",
                  "", f"Each step alone on its server, {st['concurrency']} requests at a time "
                  f"as in the article, {st['examples']} examples x {st['repetitions']} after "
                  f"{st['warmup']} warm-up; E2E P50 / P95 (non-streaming, long prompt, greedy, "
                  "at most 256 tokens: random weights write until max_tokens, guided JSON "
                  "closes its object sooner); memory is the server's GPU memory (nvidia-smi: "
                  "vLLM reserves its KV cache up front, `--gpu-memory-utilization 0.3`; "
                  "Transformers holds what it uses). Accuracy and the JSON validity of free "
                  "text are not measurable on the demo model (n/m: random weights); JSON "
                  "validity under guided decoding is. Every request: "
                  "[engines/ladder/](engines/ladder/README.md); the Playground replays the "
                  "played ladder (recording `h200-ladder-seed-004`).", "",
                  ladder_report.markdown(ladder)]
    numbers, lines = lines, []
    for name, title in (("seed-vs-optimized", "Seed default vs all optimizations"),
                        ("grid", "Thinking x guided JSON")):
        res = load(out / f"{name}.json")
        if not res:
            continue
        summary = RunSummary.model_validate(res["summary"])  # typed (core/results)
        lines += ["", f"## {title}", "", md_table(SUMMARY_HEADERS, summary_rows(summary))]
        if summary.grid:
            lines += ["", md_table(GRID_HEADERS, grid_rows(summary.grid))]
        tpot = [[r[0], r[-2], r[-1]] for r in why_rows(summary)]
        floor = summary.floor_ms
        lines += ["", f"Physical floor (weights / HBM bandwidth, batch 1): "
                  f"{_f(floor, 4)} ms per decode step.", "",
                  md_table(["variant", "TPOT p50", "x above the floor"], tpot)]
        if summary.phases:
            ph = summary.phases
            names = sorted({k for v in ph.values() for k in v})
            lines += ["", "Where the time went (median ms per phase):", "",
                      md_table(["variant", *names],
                               [[n, *[_f(v.get(k)) for k in names]] for n, v in ph.items()])]
    if pngs:
        lines += ["", "## Plots", ""] + [f"![{p.stem}]({p.name})" for p in pngs]
    return {"head": head, "runs": runs, "numbers": numbers, "rest": lines}


def summary_md(out: Path, env: dict[str, Any], steps: dict[str, Any], pngs: list[Path]) -> str:
    parts = sections(out, env, steps, pngs)
    return "\n".join(parts["head"] + parts["runs"] + parts["numbers"] + parts["rest"]) + "\n"


def readme_block(out: Path, env: dict[str, Any], steps: dict[str, Any]) -> str:
    """The README's H200 section: the environment, the board (the articles' numbers next to
    ours), the server A/Bs, fidelity and the sweep -- headings one level down."""
    parts = sections(out, env, steps, [])
    body = [ln.replace("## ", "### ", 1) if ln.startswith("## ") else
            ln.replace("### ", "#### ", 1) if ln.startswith("### ") else ln
            for ln in parts["head"][2:] + parts["numbers"]]
    body = [re.sub(r"\]\(([\w./-]+\.(?:md|html|png))\)", r"](results/h200/\1)", ln)
            for ln in body]  # docs/h200.md links into docs/results/h200/
    return "\n".join([*body, "", "Everything else (runs and wall times, the seed-vs-optimized "
                      "and thinking x guided-JSON tables, phases, plots, the claims' raw "
                      "per-request run files in claims-runs/): "
                      "[docs/results/h200/README.md](results/h200/README.md)."])


def update_readme(block: str) -> None:
    readme = ROOT / "docs" / "h200.md"
    text = readme.read_text("utf-8")
    start, end = "<!-- h200:start -->", "<!-- h200:end -->"
    if start in text and end in text:
        readme.write_text(re.sub(re.escape(start) + ".*?" + re.escape(end),
                                 lambda _: f"{start}\n{block}\n{end}", text, flags=re.S),
                          "utf-8")


def md_table(headers: list[str], rows: list[list[Any]]) -> str:
    def cell(v: Any) -> str:
        return str(v).replace("|", "/").replace("\n", " ")

    return "\n".join(["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
                     + ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows])


def _f(v: float | None, nd: int = 1) -> str:
    return "-" if v is None else f"{v:,.{nd}f}"


if __name__ == "__main__":
    sys.exit(main())

"""The GPU machine's `ray` phase (benchmarks/gpu/h200.py ray) as committed results and a README.

Reads the phase's folder (ray-bN/ and vllm-bench-bN/ concurrency sweeps, rate-sweep/), copies the
raw files into OUT (per-request CSVs and the server series gzipped, sweep.json as is), with
`--html` draws each sweep's Pareto view (sweep.html, plotly.js from its CDN; generated, not
committed) and writes OUT/README.md: per level and
block, the Ray readers next to vllm bench serve with the server's own peaks, the paired ratios
(lab/paired: with 2 blocks no interval exists, and the verdict says so), and the rate sweep with
its send delay and where it stopped.

    python benchmarks/ray_report.py PHASE_DIR/ray PHASE_DIR/ray-environment.json OUT [--html]
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playground.core.sweep_doc import SweepDoc
from playground.lab.paired import judge, paired_ratio, pairs_needed
from playground.outputs import html

HTML = "--html" in sys.argv  # also write each sweep's Pareto view (sweep.html)
NUMBERS = (("ttft_p50_ms", "TTFT p50"), ("ttft_p99_ms", "TTFT p99"),
           ("tpot_p50_ms", "TPOT p50"), ("req_per_s", "req/s"))


def _f(x: float | None, nd: int = 1) -> str:
    return "-" if x is None else f"{x:.{nd}f}"


def copy(src: Path, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    doc = json.loads((src / "sweep.json").read_text("utf-8"))
    (out / "sweep.json").write_text(json.dumps(doc, indent=1), "utf-8")
    for name in ("sweep-requests.csv", "server-series.jsonl"):
        if (src / name).exists():
            with (src / name).open("rb") as f, gzip.open(out / f"{name}.gz", "wb") as g:
                shutil.copyfileobj(f, g)
    if HTML:  # the Pareto view, generated: not committed
        (out / "sweep.html").write_text(html.sweep(SweepDoc.model_validate(doc),
                                                   plotlyjs="cdn"), "utf-8")
    return doc


def main() -> int:
    src, env_path, out = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    env = json.loads(env_path.read_text("utf-8"))
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(env_path, out / "environment.json")
    blocks = sorted({p.name.rsplit("-b", 1)[1] for p in src.glob("ray-b*")})
    docs = {(eng, b): copy(src / f"{eng}-b{b}", out / f"{eng}-b{b}")
            for eng in ("ray", "vllm-bench") for b in blocks}
    rate = copy(src / "rate-sweep", out / "rate-sweep")
    gpu = (env.get("gpus") or [{}])[0]
    lines = [
        "# The Ray readers at c128-c512 against vllm bench serve, and a Poisson rate sweep",
        "",
        f"Machine: {gpu.get('name', '?')} ({env.get('cores')} cores), vLLM "
        f"{env.get('vllm_version')}, the demo model at Qwen3-0.6B's dimensions with random "
        "weights (`--load-format dummy`, CUDA graphs); 64 output tokens, ignore_eos, thinking "
        f"off; {docs[('ray', blocks[0])].get('date')}. One managed server; `benchmarks/gpu/"
        "h200.py ray` ran everything in one device command. The lent card was an H100, not the "
        "H200 the issue names: every number here is the H100's.",
        "",
        f"- **Ray readers:** `playground sweep --engine playground --workers 8` (8 reader actors "
        "of an embedded Ray cluster on the machine's 16 cores); **vllm bench serve:** `--engine "
        f"vllm-bench`. {len(blocks)} blocks each, alternating which went first; each level "
        "2 x c requests (at least 64).",
        "- Beside every level the server's /metrics and the GPU were sampled every 0.25 s "
        "(`server-series.jsonl.gz`); `peak running` is the server's own "
        "`vllm:num_requests_running`.",
        "- Raw rows: `*/sweep-requests.csv.gz`; every number: `*/sweep.json`. Regenerate this "
        "file: `python benchmarks/ray_report.py PHASE/ray PHASE/ray-environment.json "
        "docs/results/h100/ray`; add `--html` for each sweep's Pareto view (sweep.html).",
        "",
        "## Concurrency: the Ray readers and vllm bench serve, block by block",
        "",
        "| c | engine | block | TTFT p50 / p99 ms | TPOT p50 ms | req/s | peak running | "
        "GPU util peak | barrier ms |",
        "|---|---|---|---|---|---|---|---|---|"]
    levels = [lv["concurrency"] for lv in docs[("ray", blocks[0])]["levels"]]
    for i, c in enumerate(levels):
        for eng in ("ray", "vllm-bench"):
            for b in blocks:
                lv = docs[(eng, b)]["levels"][i]
                srv = lv.get("server") or {}
                lines.append(
                    f"| c{c} | {eng} | {b} | {_f(lv['ttft_p50_ms'])} / {_f(lv['ttft_p99_ms'])} "
                    f"| {_f(lv['tpot_p50_ms'], 2)} | {_f(lv['req_per_s'])} | "
                    f"{_f(srv.get('peak_running'), 0)} | {_f(srv.get('peak_gpu_util_pct'), 0)} "
                    f"| {_f(lv.get('barrier_ms'))} |")
    lines += ["", "## Ray / vllm bench serve, paired by block", "",
              "| c | number | ratio | verdict (5%) |", "|---|---|---|---|"]
    for i, c in enumerate(levels):
        for key, label in NUMBERS:
            ref = [docs[("vllm-bench", b)]["levels"][i][key] for b in blocks]
            got = [docs[("ray", b)]["levels"][i][key] for b in blocks]
            p = paired_ratio(ref, got)
            lines.append(f"| c{c} | {label} | {_f(p.ratio, 2)} | "
                         f"{judge(p, 0.05, needed=pairs_needed(ref, got, 0.05))} |")
    lines += ["", "## A Poisson rate sweep to saturation (one reader, in-process)", "",
              "| rate | req/s | TTFT p50 ms (from schedule) | TPOT p50 ms | send delay p50 / "
              "p99 ms | client-bound | peak running |", "|---|---|---|---|---|---|---|"]
    for lv in rate["levels"]:
        srv = lv.get("server") or {}
        lines.append(
            f"| {lv['profile']} | {_f(lv['req_per_s'])} | {_f(lv['ttft_p50_ms'])} "
            f"({_f(lv.get('ttft_from_due_p50_ms'))}) | {_f(lv['tpot_p50_ms'], 2)} | "
            f"{_f(lv.get('send_delay_p50_ms'))} / {_f(lv.get('send_delay_p99_ms'))} | "
            f"{'yes' if lv.get('client_bound') else 'no'} | {_f(srv.get('peak_running'), 0)} |")
    lines += ["", f"Stopped: {rate.get('stopped') or 'no'}", ""]
    (out / "README.md").write_text("\n".join(lines) + "\n", "utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())

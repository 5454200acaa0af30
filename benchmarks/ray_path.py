"""The load path's readers side by side: in one process and on Ray actors -- the same requests,
the same server, one run.

Per level (c8 and c32 by default), `--blocks` blocks; in each block every arm runs once, in an
order rotated block by block (no arm always goes first), each on fresh prompts (no prefix-cache
hits). Arms:

- `in-process`: one reader, this process (lab/load, workers=1);
- `in-process-2`: the same again -- the control: its ratio to `in-process` is what the method
  calls a difference when there is none;
- `ray`: two reader actors on an embedded Ray cluster (lab/ray_readers).

The old home-made subprocess workers (`playground.lab.load_worker`, length-prefixed pickles) were
a fourth arm, `processes`, measured at commit 870e43f just before they were deleted; those rows
are in docs/results/cpu/ray-path/.

Per run: TTFT, TPOT and E2E p50, requests a second, and the readers' CPU per client event (each
streamed chunk is one event): this process's CPU time over the call plus, for Ray, the actors'
own from their release. Ratios to `in-process` are paired block by block with 95% intervals
(lab/paired) and judged against 5%.

    python benchmarks/ray_path.py --base-url URL --levels 8,32 --blocks 8 --out DIR
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playground.core import request
from playground.core.runner import new_recording
from playground.lab import load
from playground.lab.paired import judge, paired_ratio, pairs_needed
from playground.lab.stats import percentile
from playground.lab.sweep import fixed_variant
from playground.server.http import server_info
from playground.server.machine import describe

ARMS = ["in-process", "in-process-2", "ray"]
NUMBERS = ("ttft_p50", "tpot_p50", "e2e_p50", "req_per_s", "cpu_us_per_event")


async def one(arm: str, recs: list[Any], c: int) -> tuple[float, float]:
    """Wall seconds (start -> last record) and the readers' CPU seconds."""
    client = load.LoadClient("EMPTY", timeout_s=600, read_timeout_s=300)
    cpu0 = time.process_time()
    if arm.startswith("in-process"):
        res = await load.run_load(recs, concurrency=c, workers=1, client=client)
        return res.wall_s, time.process_time() - cpu0
    from playground.lab.ray_readers import run_readers

    shares = load.split(c, 2)
    run = await run_readers(recs, shares, load.deal(len(recs), shares), client)
    return run.window_s, time.process_time() - cpu0 + run.cpu_s


def summary(recs: list[Any], wall: float, cpu: float) -> dict[str, Any]:
    ms = [r.metrics() for r in recs if r.error is None]
    events = sum(r.events for r in recs)
    return {"n": len(recs), "failed": len(recs) - len(ms),
            "ttft_p50": percentile([m.ttft_ms for m in ms if m.ttft_ms is not None], 50),
            "tpot_p50": percentile([m.tpot_ms for m in ms if m.tpot_ms is not None], 50),
            "e2e_p50": percentile([m.e2e_ms for m in ms if m.e2e_ms is not None], 50),
            "req_per_s": len(ms) / wall if wall > 0 else None,
            "cpu_us_per_event": 1e6 * cpu / events if events else None,
            "wall_s": wall, "cpu_s": cpu, "events": events}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--levels", default="8,32")
    ap.add_argument("--blocks", type=int, default=8)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--waves", type=int, default=2, help="requests per run = waves x c")
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    arms = a.arms.split(",")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model = server_info(a.base_url, None).models[0].id
    v = fixed_variant(a.output_len)

    def recs_for(tag: str, n: int) -> list[Any]:
        return [new_recording(v, request.build(v, f"[{tag} {i}] {tag} Count slowly.", model),
                              a.base_url) for i in range(n)]

    doc: dict[str, Any] = {"machine": describe(), "date": time.strftime("%Y-%m-%d %H:%M"),
                           "base_url": a.base_url, "model": model, "arms": arms,
                           "output_len": a.output_len, "blocks": a.blocks, "levels": []}
    rows_f = (out / "ray-path-requests.csv").open("w", newline="", encoding="utf-8")
    rows = csv.writer(rows_f)
    rows.writerow(["concurrency", "block", "arm", "request", "ok", "node", "ttft_ms", "tpot_ms",
                   "e2e_ms", "output_tokens", "events"])
    for arm in arms:  # warm-up, outside every timed block: each code path once
        asyncio.run(one(arm, recs_for(f"warm {arm}", 4), 2))
    for c in [int(x) for x in a.levels.split(",")]:
        runs: dict[str, list[dict[str, Any]]] = {arm: [] for arm in arms}
        for blk in range(a.blocks):
            k = blk % len(arms)
            for arm in arms[k:] + arms[:k]:
                recs = recs_for(f"c{c} b{blk} {arm}", a.waves * c)
                wall, cpu = asyncio.run(one(arm, recs, c))
                runs[arm].append(summary(recs, wall, cpu))
                for i, r in enumerate(recs):
                    m = r.metrics()
                    rows.writerow([c, blk, arm, i, int(r.error is None), r.node or "",
                                   *(f"{x:.3f}" if x is not None else ""
                                     for x in (m.ttft_ms, m.tpot_ms, m.e2e_ms)),
                                   m.completion_tokens, r.events])
                got = runs[arm][-1]
                print(f"c{c} block {blk} {arm:13} {got['req_per_s']:.1f} req/s TTFT p50 "
                      f"{got['ttft_p50']:.1f} ms {got['cpu_us_per_event'] or 0:.0f} us/event",
                      flush=True)
        ratios = {}
        for arm in arms[1:]:
            ratios[arm] = {}
            for key in NUMBERS:
                ref = [b[key] for b in runs["in-process"]]
                got = [b[key] for b in runs[arm]]
                p = paired_ratio(ref, got)
                ratios[arm][key] = {
                    "ratio": p.ratio, "ci": p.ci, "pairs": p.n_pairs,
                    "verdict": judge(p, 0.05, needed=pairs_needed(ref, got, 0.05))}
        doc["levels"].append({"concurrency": c, "runs": runs, "ratios": ratios})
        (out / "ray-path.json").write_text(json.dumps(doc, indent=1), "utf-8")
    rows_f.close()
    print(report(doc))
    (out / "README.md").write_text(report(doc), "utf-8")
    return 0


def _r(x: dict[str, Any]) -> str:
    if x["ratio"] is None:
        return "-"
    ci = f" ({x['ci'][0]:.2f}-{x['ci'][1]:.2f})" if x["ci"] else ""
    return f"{x['ratio']:.2f}{ci}"


def report(doc: dict[str, Any]) -> str:
    m = doc["machine"]
    lines = [f"# The load path's readers side by side ({doc['date']})", "",
             f"Machine: {m.get('cpu', '?')}, {m.get('cores', '?')} cores; server "
             f"{doc['base_url']} ({doc['model']}); {doc['output_len']} tokens per answer; "
             f"{doc['blocks']} blocks per arm, order rotated. Ratios are arm / in-process, "
             "paired by block, with 95% intervals; `in-process-2` is the control (the same "
             "reader again). Raw rows: ray-path-requests.csv; every run: ray-path.json.", ""]
    for lv in doc["levels"]:
        lines += [f"## c{lv['concurrency']}", "",
                  "| arm | " + " | ".join(NUMBERS) + " |",
                  "|---|" + "---|" * len(NUMBERS)]
        for arm, per in lv["ratios"].items():
            lines.append(f"| {arm} | " + " | ".join(_r(per[k]) for k in NUMBERS) + " |")
        lines += ["", "Medians over blocks:", "",
                  "| arm | " + " | ".join(NUMBERS) + " |", "|---|" + "---|" * len(NUMBERS)]
        for arm, runs in lv["runs"].items():
            med = [percentile([r[k] for r in runs if r[k] is not None], 50) for k in NUMBERS]
            lines.append(f"| {arm} | " + " | ".join(
                "-" if x is None else f"{x:.2f}" for x in med) + " |")
        lines += ["", "Verdicts against 5%:", ""]
        for arm, per in lv["ratios"].items():
            for k in NUMBERS:
                lines.append(f"- {arm} {k}: {per[k]['verdict']}")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

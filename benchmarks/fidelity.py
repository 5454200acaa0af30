"""Fidelity: the load path's numbers vs `vllm bench serve`, side by side, at several concurrencies.

One run, one server, one workload: for each concurrency, alternating blocks of unique prompts
(no prefix-cache hits across blocks) go through three readers, in a rotating order:

- `vllm bench serve` (the installed vLLM's, in this process, its openai-chat backend);
- the load path (lab/load: the raw reader, worker processes when one cannot keep up);
- the openai SDK in one process (the Playground's reader: shows the SDK's own overhead).

Same prompts (one format, one length), same output length (`ignore_eos`), thinking off,
temperature 0. Every per-request number is kept (CSV: TTFT, TPOT, E2E, output tokens, every ITL)
and every percentile -- for vllm bench too -- is computed from those rows by lab/stats (linear
interpolation). Request throughput is completed requests / the tool's wall time (vllm bench:
its `duration`; ours: start signal -> last record back). Targets (docs/load.md): TTFT, TPOT and
ITL p50/p99 within 5% of vllm bench, throughput at least 95% of it.

    python benchmarks/fidelity.py                                  # starts the CPU demo server
    python benchmarks/fidelity.py --base-url URL --tokenizer DIR --concurrency 1,8,32,128,256
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playground.core import request
from playground.lab.engine import BenchServe, rows_of_result, write_prompts
from playground.lab.fidelity import KEYS, Block, level
from playground.lab.load import auto_workers
from playground.lab.sweep import METRICS, RowWriter, fixed_variant, ours
from playground.server import demo_model
from playground.server.http import server_info
from playground.server.managed import ManagedServer, cpu_demo_config
from playground.server.series import Sampler
from playground.settings import REPO_ROOT

ADDRESS = "长沙市岳麓区桃花岭路189号润丰园B座1202室 | 电话021-17613435 | 联系人江雨桐"
TOOLS = ("vllm-bench", "load-path", "openai-sdk")


def prompts(concurrency: int, block: int, tool: str, n: int) -> list[str]:
    return [f"[c{concurrency} block {block} {tool} request {i}] {ADDRESS}" for i in range(n)]


def run_vllm_bench(base_url: str, model: str, tokenizer: str, texts: list[str],
                   output_len: int, concurrency: int) -> tuple[list[dict[str, Any]], float]:
    """vllm bench serve's own client, in this process (imported once), with the arguments
    lab/engine gives it as a subprocess; per-request rows from its detailed result."""
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    with tempfile.TemporaryDirectory() as tmp:
        spec = BenchServe(base_url, model, tokenizer, concurrency,
                          dataset=write_prompts(Path(tmp) / "prompts.jsonl", texts),
                          num_prompts=len(texts), output_len=output_len,
                          result_dir=Path(tmp))
        p = FlexibleArgumentParser()
        add_cli_args(p)
        main(p.parse_args(spec.args()))
        r = json.loads((Path(tmp) / "result.json").read_text("utf-8"))
    return rows_of_result(r), float(r["duration"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", help="an existing server (default: start the demo server)")
    ap.add_argument("--tokenizer", help="tokenizer dir for vllm bench (default: demo model)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--concurrency", default="1,8,32", help="comma-separated, e.g. "
                    "1,8,32,128,256")
    ap.add_argument("--num-prompts", type=int, default=32,
                    help="per block and tool, at least --waves x the concurrency")
    ap.add_argument("--waves", type=int, default=4, help="requests per block = waves x "
                    "concurrency (more waves: less of the block is ramp-up and tail)")
    ap.add_argument("--sdk-up-to", type=int, default=10**6,
                    help="run the openai-SDK reader only up to this concurrency")
    ap.add_argument("--blocks", type=int, default=6,
                    help="blocks per tool and concurrency (pairs for the verdict: fewer than 6 "
                    "resolve nothing at 0.05; a 5%% call at a 10%% spread takes ~20-30)")
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--workers", type=int, help="load-path reader processes (default: auto)")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--out", help="folder for fidelity.json and fidelity-requests.csv")
    ap.add_argument("--series-interval", type=float, default=0.25,
                    help="seconds between two samples of the server's /metrics (and each "
                    "GPU) during each level, kept as series-c{N}.jsonl; 0 = off")
    a = ap.parse_args()
    levels = [int(c) for c in a.concurrency.split(",")]
    tools = [t for t in a.tools.split(",") if t]

    tokenizer = a.tokenizer or str(demo_model.ensure(REPO_ROOT / ".cache" / "demo-model-tiny"))
    server = None
    base_url = a.base_url
    if base_url is None:
        cfg = cpu_demo_config(Path(tokenizer), port=8765, per_request_metrics=True)
        server = ManagedServer(cfg, REPO_ROOT / ".cache" / "logs" / "fidelity-vllm.log")
        print("starting the demo vLLM server (1-3 min on a CPU)...", file=sys.stderr)
        server.start()
        server.wait_ready()
        base_url = cfg.base_url
    out = Path(a.out) if a.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    writer = RowWriter(out / "fidelity-requests.csv") if out else None
    result: dict[str, Any] = {}
    try:
        info = server_info(base_url, None)
        model = a.model or info.models[0].id
        result = {
            "machine": f"{platform.machine()} {platform.processor() or ''} "
                       f"({os.cpu_count()} cores)".strip(),
            "vllm": info.version, "output_len": a.output_len, "blocks": a.blocks,
            "waves": a.waves,
            "tools": tools, "date": time.strftime("%Y-%m-%d"),
            "vllm_bench_rows": "role-aligned",  # lab/sweep.WRITTEN
            "body": request.build(fixed_variant(a.output_len), "<prompt>", model).body(),
            "levels": [],
        }
        # warm-up outside the timed blocks: every reader, every code path
        run_vllm_bench(base_url, model, tokenizer, prompts(0, -1, "warm", 4), a.output_len, 2)
        ours(base_url, "EMPTY", model, prompts(0, -1, "warm-raw", 4), a.output_len, 2,
             client="raw", workers=1)
        ours(base_url, "EMPTY", model, prompts(0, -1, "warm-sdk", 4), a.output_len, 2,
             client="openai", workers=1)
        for c in levels:
            n = max(a.num_prompts, a.waves * c)
            workers = a.workers or auto_workers(c)
            here = [t for t in tools if t != "openai-sdk" or c <= a.sdk_up_to]
            blocks: dict[str, list[Block]] = {t: [] for t in here}
            sampler = Sampler(base_url, interval_s=a.series_interval).start()
            for blk in range(a.blocks):
                k = blk % len(here)
                for tool in here[k:] + here[:k]:  # rotate: no tool always goes first
                    texts = prompts(c, blk, tool, n)
                    if tool == "vllm-bench":
                        got, wall = run_vllm_bench(base_url, model, tokenizer, texts,
                                                   a.output_len, c)
                    else:
                        got, res = ours(base_url, "EMPTY", model, texts, a.output_len, c,
                                        client="raw" if tool == "load-path" else "openai",
                                        workers=workers if tool == "load-path" else 1)
                        wall = res.wall_s
                    blocks[tool].append((got, wall))
                    if writer:
                        writer.write(c, blk, tool, got)
            # block i of every reader ran back to back: each number is judged on the pairs
            # of blocks, with a 95% interval (lab/fidelity, lab/paired); vllm bench's own
            # block-to-block spread is reported beside it
            series = sampler.stop()
            lv = level(c, blocks, n_per_block=n, load_path_workers=workers)
            result["levels"].append(lv)
            # what the server (and each GPU) did meanwhile: beside the levels, not in them
            # (load_report recomputes the levels from the rows)
            result.setdefault("server", {})[str(c)] = series.summary()
            if out:
                (out / f"series-c{c}.jsonl").write_text(
                    "".join(x.model_dump_json() + "\n" for x in series.lines()), "utf-8")
            _print_level(lv, here)
            if out:
                (out / "fidelity.json").write_text(json.dumps(result, indent=1), "utf-8")
    finally:
        if writer:
            writer.close()
        if server is not None:
            server.stop()
    return 0


def _print_level(level: dict[str, Any], tools: list[str]) -> None:
    c = level["concurrency"]
    print(f"\nconcurrency {c}: {level['n_per_block']} requests per block and tool, load path "
          f"on {level['load_path_workers']} reader process(es)")
    print(f"{'':16}" + "".join(f"{t:>14}" for t in tools)
          + "".join(f"{t + '/bench':>20}" for t in tools if t != "vllm-bench"))
    for k in [f"{m}_{q}_ms" for m in METRICS for q in ("p50", "p99")] + ["req_per_s"]:
        vals = "".join(f"{_n(level[t][k]):>14}" for t in tools)
        rat = "".join(f"{_n(level.get(f'{t}_vs_vllm_bench', {}).get(k), 3):>20}"
                      for t in tools if t != "vllm-bench")
        print(f"{k:16}{vals}{rat}")
    sp = level.get("vllm_bench_block_spread", {})
    for t in tools:
        if f"{t}_verdicts" in level:
            print(f"{t} vs vllm bench (vllm bench's own block spread in brackets):")
            for k in KEYS:
                print(f"  {k:14} {_n(level[f'{t}_vs_vllm_bench'][k], 3):>7} "
                      f"[{_n(sp.get(k), 3)}]  {level[f'{t}_verdicts'][k]}")


def _n(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


if __name__ == "__main__":
    sys.exit(main())

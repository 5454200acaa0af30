"""Fidelity: the playground's numbers vs `vllm bench serve` on one server and one workload.

Runs both tools against the same server, in alternating blocks (bench, ours, bench, ours) of
unique prompts (no prefix-cache hits across blocks), and prints median TTFT and TPOT of each
and their ratio, and request throughput (for the "runner is never the bottleneck" target at
concurrency 32: at least 95% of vllm bench's). With --enable-per-request-metrics on the
server it also prints client TTFT minus server TTFT (transport + HTTP + client parsing).
Targets (docs/measurement.md): ratios
within 5%, overhead p50 at most 2 ms.

    python benchmarks/fidelity.py                      # starts the CPU demo server itself
    python benchmarks/fidelity.py --base-url URL --tokenizer DIR --concurrency 32
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playground.core import request
from playground.core.client import ClientPool
from playground.core.runner import new_recording, run_many
from playground.lab.stats import median
from playground.server import demo_model
from playground.server.http import server_info
from playground.server.managed import ManagedServer, cpu_demo_config
from playground.settings import REPO_ROOT
from playground.specs.presets import Variant

ADDRESS = "长沙市岳麓区桃花岭路189号润丰园B座1202室 | 电话021-17613435 | 联系人江雨桐"


def prompts(block: int, n: int) -> list[str]:
    return [f"[block {block} request {i}] {ADDRESS}" for i in range(n)]


def vllm_bench(base_url: str, model: str, tokenizer: str, texts: list[str], output_len: int,
               concurrency: int) -> dict:
    from vllm.benchmarks.serve import add_cli_args, main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "prompts.jsonl"
        data.write_text("".join(json.dumps({"prompt": t}, ensure_ascii=False) + "\n"
                                for t in texts), "utf-8")
        p = FlexibleArgumentParser()
        add_cli_args(p)
        root = base_url.rstrip("/").removesuffix("/v1")
        args = p.parse_args([
            "--backend", "openai-chat", "--base-url", root, "--endpoint", "/v1/chat/completions",
            "--model", model, "--tokenizer", tokenizer, "--dataset-name", "custom",
            "--dataset-path", str(data), "--skip-chat-template", "--num-prompts",
            str(len(texts)), "--custom-output-len", str(output_len), "--ignore-eos",
            "--max-concurrency", str(concurrency), "--request-rate", "inf",
            "--temperature", "0", "--num-warmups", "0", "--disable-tqdm",
            "--extra-body", json.dumps({"chat_template_kwargs": {"enable_thinking": False}}),
        ])
        return main(args)


def ours(base_url: str, model: str, texts: list[str], output_len: int, concurrency: int
         ) -> dict:
    v = Variant(name="fidelity", stream=True, thinking=False, temperature=0.0,
                max_tokens=output_len, ignore_eos=True)
    recs = [new_recording(v, request.build(v, t, model), base_url) for t in texts]

    async def go() -> None:
        pool = ClientPool("EMPTY")
        try:
            await run_many(pool, recs, concurrency=concurrency, timeout_s=600)
        finally:
            await pool.aclose()

    t0 = time.perf_counter()
    asyncio.run(go())
    wall_s = time.perf_counter() - t0
    failed = [r for r in recs if r.error is not None]
    if failed:
        raise SystemExit(f"{len(failed)} requests failed, first: {failed[0].error}")
    ms = [r.metrics() for r in recs]
    overhead = [m.ttft_ms - r.raw.server_metrics["time_to_first_token_ms"]
                for r, m in zip(recs, ms, strict=True)
                if r.raw.server_metrics and m.ttft_ms is not None
                and "time_to_first_token_ms" in r.raw.server_metrics]
    return {
        "ttft": [m.ttft_ms for m in ms], "first_chunk": [m.first_chunk_ms for m in ms],
        "tpot": [m.tpot_ms for m in ms if m.tpot_ms is not None], "overhead": overhead,
        "throughput": [len(recs) / wall_s],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", help="an existing server (default: start the demo server)")
    ap.add_argument("--tokenizer", help="tokenizer dir for vllm bench (default: demo model)")
    ap.add_argument("--model", default=None)
    ap.add_argument("--num-prompts", type=int, default=40, help="per block")
    ap.add_argument("--blocks", type=int, default=2, help="alternating blocks per tool")
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--json-out")
    a = ap.parse_args()

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
    try:
        info = server_info(base_url, None)
        model = a.model or info.models[0].id
        # warm-up: both paths, outside the timed blocks
        vllm_bench(base_url, model, tokenizer, prompts(-1, 4), a.output_len, a.concurrency)
        ours(base_url, model, prompts(-2, 4), a.output_len, a.concurrency)
        b_ttft, b_tpot, b_thr = [], [], []
        o: dict[str, list] = {"ttft": [], "first_chunk": [], "tpot": [], "overhead": [],
                              "throughput": []}
        for blk in range(a.blocks):
            texts = prompts(2 * blk, a.num_prompts)
            r = vllm_bench(base_url, model, tokenizer, texts, a.output_len, a.concurrency)
            b_ttft.append(r["median_ttft_ms"])
            b_tpot.append(r["median_tpot_ms"])
            b_thr.append(r["request_throughput"])
            mine = ours(base_url, model, prompts(2 * blk + 1, a.num_prompts), a.output_len,
                        a.concurrency)
            for k in o:
                o[k] += mine[k]
    finally:
        if server is not None:
            server.stop()

    result = {
        "machine": f"{platform.machine()} {platform.processor() or ''} "
                   f"({__import__('os').cpu_count()} cores)".strip(),
        "vllm": info.version, "concurrency": a.concurrency, "output_len": a.output_len,
        "n_per_tool": a.num_prompts * a.blocks,
        "vllm_bench_median_ttft_ms": statistics.median(b_ttft),
        "vllm_bench_median_tpot_ms": statistics.median(b_tpot),
        "ours_median_ttft_ms": median(o["ttft"]),
        "ours_median_first_chunk_ms": median(o["first_chunk"]),
        "ours_median_tpot_ms": median(o["tpot"]),
        "overhead_p50_ms": median(o["overhead"]) if o["overhead"] else None,
        "vllm_bench_req_s": statistics.median(b_thr),
        "ours_req_s": statistics.median(o["throughput"]),
    }
    result["ttft_ratio"] = result["ours_median_ttft_ms"] / result["vllm_bench_median_ttft_ms"]
    result["tpot_ratio"] = result["ours_median_tpot_ms"] / result["vllm_bench_median_tpot_ms"]
    result["throughput_ratio"] = result["ours_req_s"] / result["vllm_bench_req_s"]
    print(f"\nfidelity on {result['machine']}, vLLM {result['vllm']}, concurrency "
          f"{a.concurrency}, {a.output_len} output tokens, n={result['n_per_tool']} per tool")
    print(f"{'':22}{'vllm bench serve':>18}{'playground':>12}{'ratio':>8}")
    print(f"{'median TTFT (ms)':22}{result['vllm_bench_median_ttft_ms']:18.2f}"
          f"{result['ours_median_ttft_ms']:12.2f}{result['ttft_ratio']:8.3f}")
    print(f"{'median TPOT (ms)':22}{result['vllm_bench_median_tpot_ms']:18.2f}"
          f"{result['ours_median_tpot_ms']:12.2f}{result['tpot_ratio']:8.3f}")
    print(f"{'request throughput/s':22}{result['vllm_bench_req_s']:18.2f}"
          f"{result['ours_req_s']:12.2f}{result['throughput_ratio']:8.3f}")
    if result["overhead_p50_ms"] is not None:
        print(f"client TTFT - server TTFT, p50: {result['overhead_p50_ms']:.2f} ms "
              "(server TTFT = per-request metrics, from scheduling)")
    if a.json_out:
        Path(a.json_out).write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

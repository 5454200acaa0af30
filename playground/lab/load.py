"""The load path: many requests with a fixed number in flight, in one process or spread over
reader actors on Ray when one process cannot read every stream on time (docs/load.md).

Requests are the recordings the caller built (request/build: the body the Playground builds and
"View code" shows); the reader is the variant's client ("auto" = the raw reader, core/wire).

Several readers: each has a fixed share of the requests and of the concurrency (reader w keeps
c_w in flight, sum c_w = c; its requests are dealt in proportion to c_w); lab/ray_readers runs
them, releases them together, merges their stamps as durations and keeps what a lost reader
finished.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from playground.core.pool import ClientName, ClientPool
from playground.core.runner import Recording, run_many
from playground.lab.ray_readers import run_readers

# Streams one reader process keeps in flight before the load path adds another process. The
# raw reader costs ~25-40 us of CPU per chunk (docs/load.md); 32 streams at a 3 ms TPOT are
# ~11k chunks/s, about a third of one core, which leaves room for bursts.
STREAMS_PER_WORKER = 32


def auto_workers(concurrency: int, cpus: int | None = None) -> int:
    """One process per STREAMS_PER_WORKER streams, at most half the machine's cores (the server,
    when it runs here, needs the rest); 1 on a small machine."""
    cpus = cpus or os.cpu_count() or 1
    return max(1, min(math.ceil(concurrency / STREAMS_PER_WORKER), cpus // 2))


@dataclass(frozen=True)
class LoadClient:
    """What a reader needs to build its own pool. The key is never logged or stored; a Ray
    reader gets this without it and takes the key from its own node's environment."""

    api_key: str
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 60.0
    timeout_s: float = 120.0
    auto_client: ClientName = "raw"
    key_for: str | None = None  # the base URL the key belongs to (ClientPool.key_for)

    def pool(self) -> ClientPool:
        return ClientPool(self.api_key, auto_client=self.auto_client, key_for=self.key_for,
                          connect_timeout_s=self.connect_timeout_s,
                          read_timeout_s=self.read_timeout_s, timeout_s=self.timeout_s)


@dataclass
class LoadResult:
    workers: int
    concurrency: int
    wall_s: float  # start -> last record (Ray: the longest reader's span from its release)
    barrier_s: float = 0.0  # Ray: the release's uncertainty (our clock before/after it)
    nodes: dict[str, int] = field(default_factory=dict)  # Ray: node id -> its requests
    reader_cpu_s: float | None = None  # Ray: the readers' own CPU time
    events: int | None = None  # Ray: the client events they handled


def split(concurrency: int, n_workers: int) -> list[int]:
    """Concurrency per worker: as even as possible, each at least 1."""
    n = max(1, min(n_workers, concurrency))
    return [concurrency // n + (w < concurrency % n) for w in range(n)]


def deal(n_requests: int, shares: Sequence[int]) -> list[list[int]]:
    """Request indices per worker, dealt in proportion to each worker's concurrency."""
    # interleaved (0 1 2 3 0 1 ...), so a remainder spreads over the workers
    order = [w for k in range(max(shares)) for w, c in enumerate(shares) if k < c]
    out: list[list[int]] = [[] for _ in shares]
    for i in range(n_requests):
        out[order[i % len(order)]].append(i)
    return out


async def run_load(recordings: Sequence[Recording], *, concurrency: int, client: LoadClient,
                   workers: int | None = None, pool: Any = None,
                   on_done: Callable[[Recording], None] | None = None,
                   ray_address: str | None = None) -> LoadResult:
    """Run every recording with `concurrency` in flight; `workers` None = auto_workers.

    One worker runs here, on `pool` when given (the caller's: a scripted pool in tests); more,
    or a Ray address (`ray_address` or RAY_ADDRESS), run as reader actors on Ray
    (lab/ray_readers).
    """
    n_workers = workers if workers is not None else auto_workers(concurrency)
    n_workers = max(1, min(n_workers, concurrency, max(1, len(recordings))))
    address = ray_address or os.environ.get("RAY_ADDRESS") or None
    t0 = time.perf_counter()
    if n_workers == 1 and address is None:
        own = pool is None
        pool = pool or client.pool()
        try:
            await run_many(pool, recordings, concurrency=concurrency,
                           timeout_s=client.timeout_s, on_done=on_done)
        finally:
            if own:
                await pool.aclose()
        return LoadResult(1, concurrency, time.perf_counter() - t0)
    shares = split(concurrency, n_workers)
    dealt = deal(len(recordings), shares)
    run = await run_readers(recordings, shares, dealt, client, address=address,
                            on_done=on_done)
    return LoadResult(run.readers, sum(shares), run.window_s, run.barrier_s, run.nodes,
                      run.cpu_s, run.events)

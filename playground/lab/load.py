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

# Streams one reader process keeps in flight before the load path adds readers. The raw reader
# costs ~25-40 us of CPU per chunk (docs/load.md); 32 streams at a 3 ms TPOT are ~11k chunks/s,
# about a third of one core, which leaves room for bursts.
STREAMS_PER_WORKER = 32
# Past that, Ray readers of this many streams each. A Ray reader costs 3-4x the CPU per event
# (every finished request crosses Ray's object store: docs/results/cpu/ray-path); on an H100,
# 8 of them kept c128 in flight but not c256 -- the server ran at most 74-86 requests of 256
# (docs/results/h100/ray).
STREAMS_PER_RAY_READER = 16


def auto_workers(concurrency: int, cpus: int | None = None) -> int:
    """One reader (this process) up to STREAMS_PER_WORKER streams; past that one Ray reader per
    STREAMS_PER_RAY_READER streams, on at most half the machine's cores (the server, when it
    runs here, needs the rest); 1 on a small machine."""
    cpus = cpus or os.cpu_count() or 1
    if concurrency <= STREAMS_PER_WORKER:
        return 1
    return max(1, min(math.ceil(concurrency / STREAMS_PER_RAY_READER), cpus // 2))


def capacity(workers: int) -> int:
    """The streams `workers` readers keep in flight on time (the hand-off rule: lab/sweep)."""
    return STREAMS_PER_WORKER if workers == 1 else workers * STREAMS_PER_RAY_READER


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

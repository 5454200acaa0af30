"""The load path: many requests with a fixed number in flight, in one process or spread over
worker processes when one process cannot read every stream on time (docs/load.md).

Requests are the recordings the caller built (request/build: the body the Playground builds and
"View code" shows); the reader is the variant's client ("auto" = the raw reader, core/wire).

Several workers: each is a process of its own (`python -m playground.lab.load_worker`) with a
fixed share of the requests and of the concurrency (worker w keeps c_w in flight, sum c_w = c;
its requests are dealt in proportion to c_w). All workers start, report ready, and begin
together on one signal. Every stamp is `time.perf_counter()`, which on Linux is CLOCK_MONOTONIC
-- one clock for every process on the machine -- so the parent merges the workers' records as
they are, with no offset: the run's span is min(t_send)..max(t_last) over all of them. Each
finished request comes back at once (a pipe message) and the caller's `on_done` stores it, so a
worker that dies loses only its in-flight requests, which are recorded as failed with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import pickle
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.core.pool import ClientName, ClientPool
from playground.core.runner import Recording, run_many
from playground.errors import StreamError
from playground.lab.ray_readers import run_readers

# Streams one reader process keeps in flight before the load path adds another process. The
# raw reader costs ~25-40 us of CPU per chunk (docs/load.md); 32 streams at a 3 ms TPOT are
# ~11k chunks/s, about a third of one core, which leaves room for bursts.
STREAMS_PER_WORKER = 32
READY_TIMEOUT_S = 120.0


def auto_workers(concurrency: int, cpus: int | None = None) -> int:
    """One process per STREAMS_PER_WORKER streams, at most half the machine's cores (the server,
    when it runs here, needs the rest); 1 on a small machine."""
    cpus = cpus or os.cpu_count() or 1
    return max(1, min(math.ceil(concurrency / STREAMS_PER_WORKER), cpus // 2))


@dataclass(frozen=True)
class LoadClient:
    """What a worker needs to build its own pool (the key never leaves this machine's
    processes; it is not logged or stored)."""

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


async def _run_workers(recordings: Sequence[Recording], shares: list[int],
                       dealt: list[list[int]], client: LoadClient,
                       on_done: Callable[[Recording], None] | None) -> LoadResult:
    # Workers are `python -m playground.lab.load_worker` subprocesses talking over their
    # stdin/stdout (length-prefixed pickles), not multiprocessing: spawn would re-import the
    # caller's __main__ (an app, a test runner), and fork is unsafe with the caller's threads.
    procs: list[asyncio.subprocess.Process] = []
    finished: set[int] = set()
    try:
        for w, (share, idx) in enumerate(zip(shares, dealt, strict=True)):
            items = [(i, recordings[i].variant, recordings[i].request, recordings[i].base_url)
                     for i in idx]
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "playground.lab.load_worker",
                stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": _pythonpath()})
            assert proc.stdin is not None
            proc.stdin.write(frame((w, items, share, client)))
            await proc.stdin.drain()
            procs.append(proc)
        async with asyncio.timeout(READY_TIMEOUT_S):
            for w, proc in enumerate(procs):
                msg = await read_frame(proc.stdout)
                if msg is None or msg[0] != "ready":
                    raise RuntimeError(f"load worker {w} exited (code {await proc.wait()}) "
                                       "before the run started")
        for proc in procs:  # one signal, as close together as the pipes allow
            assert proc.stdin is not None
            proc.stdin.write(b"g")
        t0 = time.perf_counter()
        await asyncio.gather(*(_collect(w, p, recordings, dealt[w], finished, on_done)
                               for w, p in enumerate(procs)))
        return LoadResult(len(procs), sum(shares), time.perf_counter() - t0)
    finally:
        for proc in procs:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.terminate()  # connections drop: vLLM aborts what they had in flight
        for proc in procs:
            try:
                async with asyncio.timeout(5):
                    await proc.wait()
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        for i, rec in enumerate(recordings):
            if i not in finished and not rec.finished:
                rec.status = "cancelled"


async def _collect(w: int, proc: asyncio.subprocess.Process, recordings: Sequence[Recording],
                   mine: list[int], finished: set[int],
                   on_done: Callable[[Recording], None] | None) -> None:
    while True:
        msg = await read_frame(proc.stdout)
        if msg is None:  # the worker died mid-run: what it finished is kept
            _lost(recordings, mine, finished, w, await proc.wait(), on_done)
            return
        kind, key, payload = msg
        if kind == "end":
            return
        rec = recordings[key]
        _apply(rec, payload)
        finished.add(key)
        if on_done is not None:
            on_done(rec)


def _pythonpath() -> str:
    """The worker imports this package from where the parent found it (a checkout or a venv)."""
    root = str(Path(__file__).resolve().parents[2])
    old = os.environ.get("PYTHONPATH")
    return f"{root}{os.pathsep}{old}" if old else root


def frame(obj: object) -> bytes:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return struct.pack("!I", len(data)) + data


async def read_frame(stream: asyncio.StreamReader | None) -> Any:
    """One message, or None at end of stream."""
    assert stream is not None
    try:
        head = await stream.readexactly(4)
        return pickle.loads(await stream.readexactly(struct.unpack("!I", head)[0]))
    except asyncio.IncompleteReadError:
        return None


def _apply(rec: Recording, payload: dict[str, Any]) -> None:
    for name, value in payload.items():
        setattr(rec, name, value)


def _lost(recordings: Sequence[Recording], mine: list[int], finished: set[int], w: int,
          code: int | None, on_done: Callable[[Recording], None] | None) -> None:
    for i in mine:
        if i in finished:
            continue
        rec = recordings[i]
        rec.error = StreamError(f"load worker {w} exited (code {code}) before this request "
                                "finished", hint="see the worker's stderr; the requests it "
                                "finished are kept")
        rec.status = "error"
        finished.add(i)
        if on_done is not None:
            on_done(rec)


def payload(rec: Recording) -> dict[str, Any]:
    return {"raw": rec.raw, "status": rec.status, "content": rec.content,
            "reasoning": rec.reasoning, "error": rec.error, "events": rec.events,
            "clock_origin": rec.clock_origin, "client": rec.client}

"""The load path past one process: reader actors on Ray (docs/load.md, "Past one process").

Each reader is a Ray actor that runs the same core runner (`run_many`) over its share of the
requests and of the concurrency, and streams every finished recording back at once (a Ray
streaming generator), so the caller stores it as it arrives and a reader that is lost -- its
process or its whole node -- loses only the requests it had not finished, each recorded as
failed with the reason.

Clocks: each reader stamps its own requests on its own machine's monotonic clock. All readers
start on one release (`go`, sent to every reader at once); the caller notes its own clock
before and after the release (the barrier's uncertainty). A reader on this machine (same boot
id: one CLOCK_MONOTONIC) keeps its stamps as they are; a reader elsewhere has its stamps moved
to this machine's clock as durations since its own release, placed at the release's midpoint --
only durations cross machines. The run's window is the longest reader span (release -> its
last record), stated with the barrier's uncertainty.

The key: a reader takes the API key from its own environment (`PLAYGROUND_API_KEY`), never from
a task argument or Ray's runtime env (Ray writes a runtime env into its logs). The caller sends
only a digest, so a reader on a node started without the key (or with another) refuses at once,
naming the fix. `ray.init()` with no address starts an embedded cluster whose readers inherit
this process's environment; `RAY_ADDRESS` (`--ray-address`) joins an existing cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from playground.core.runner import Recording, new_recording, run_many
from playground.errors import PlaygroundError, StreamError, ValidationFailed
from playground.lab.ray_embedded import watch

KEY_ENV = "PLAYGROUND_API_KEY"
READY_TIMEOUT_S = 120.0
STAMPS = ("t_due", "t_send", "t_call", "t_headers", "t_first_chunk", "t_first_reasoning",
          "t_first_content", "t_last")


def digest(key: str) -> str | None:
    """What the caller sends instead of the key ("EMPTY": no key, nothing to check)."""
    return None if key in ("", "EMPTY") else hashlib.sha256(key.encode()).hexdigest()


def boot_id() -> str:
    """Readers with the same boot id share one CLOCK_MONOTONIC (time.perf_counter on Linux)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return f"unknown-{os.getpid()}"


def payload(rec: Recording) -> dict[str, Any]:
    return {"raw": rec.raw, "status": rec.status, "content": rec.content,
            "reasoning": rec.reasoning, "error": rec.error, "events": rec.events,
            "clock_origin": rec.clock_origin, "client": rec.client}


def rebase(rec: Recording, shift: float) -> None:
    """Move a reader's stamps onto this machine's clock (`shift` = ours - theirs)."""
    if not shift:
        return
    raw = rec.raw
    for name in STAMPS:
        t = getattr(raw, name)
        if t is not None:
            setattr(raw, name, t + shift)
    raw.token_times = [t + shift for t in raw.token_times]
    wall, perf = rec.clock_origin
    rec.clock_origin = (wall, perf + shift)


class Reader:
    """One reader actor (wrapped by `ray.remote` in `_actor`; plain here so it imports without
    Ray). Its methods run on the actor's own event loop."""

    def __init__(self) -> None:
        self._go = asyncio.Event()
        self._recs: list[Recording] = []
        self._index: dict[int, int] = {}
        self._client: Any = None
        self._concurrency = 1
        self._released = 0.0

    async def setup(self, items: list[tuple[int, Any, Any, str]], concurrency: int,
                    client: Any, key_digest: str | None) -> dict[str, Any]:
        import ray

        key = os.environ.get(KEY_ENV, "")
        node = ray.get_runtime_context().get_node_id()
        if key_digest is not None and digest(key) != key_digest:
            raise ValidationFailed(KEY_ENV, (
                f"the Ray node {node[:12]} has {'another' if key else 'no'} API key: start "
                f"that node's `ray start` with {KEY_ENV} set to the server's key (the key never "
                "travels in a task or Ray's runtime env)"))
        self._client = dataclasses.replace(client, api_key=key or "EMPTY")
        self._recs = [new_recording(v, req, url) for _, v, req, url in items]
        self._index = {id(r): i for (i, *_), r in zip(items, self._recs, strict=True)}
        self._concurrency = concurrency
        return {"node": node, "boot_id": boot_id(), "pid": os.getpid()}

    async def go(self) -> float:
        self._released = time.perf_counter()
        self._go.set()
        return self._released

    async def run(self):  # type: ignore[no-untyped-def]  # a Ray streaming generator
        """("sent", i, None) as request i takes its slot, ("done", i, payload) as it finishes,
        then ("end", stats, None)."""
        await self._go.wait()
        out: asyncio.Queue[tuple[str, Recording] | None] = asyncio.Queue()
        cpu0 = time.process_time()

        async def work() -> None:
            pool = self._client.pool()
            try:
                await run_many(pool, self._recs, concurrency=self._concurrency,
                               timeout_s=self._client.timeout_s,
                               on_start=lambda r: out.put_nowait(("sent", r)),
                               on_done=lambda r: out.put_nowait(("done", r)))
            finally:
                await pool.aclose()
                out.put_nowait(None)

        task = asyncio.create_task(work())
        last = self._released
        while (item := await out.get()) is not None:
            kind, rec = item
            if kind == "done":
                last = time.perf_counter()
            yield (kind, self._index[id(rec)], payload(rec) if kind == "done" else None)
        await task
        yield ("end", {"span_s": last - self._released, "cpu_s": time.process_time() - cpu0,
                       "events": sum(r.events for r in self._recs)}, None)


@dataclasses.dataclass
class RayRun:
    readers: int
    window_s: float  # the longest reader span: release -> its last record
    barrier_s: float  # the release's uncertainty: our clock before and after it
    nodes: dict[str, int]  # node id -> requests it finished (lost ones included)
    cpu_s: float  # the readers' own CPU time
    events: int


def connect(address: str | None, readers: int, key: str) -> Any:
    """Ray, joined (address or RAY_ADDRESS) or embedded (started here, readers inheriting this
    process's environment, the key included)."""
    try:
        import ray
    except ImportError:
        raise ValidationFailed("--workers", "more than one reader process runs on Ray, which "
                               "is not installed: pip install 'qwen-latency-lab[distributed]', "
                               "or use one reader (--workers 1)") from None
    if not ray.is_initialized():
        address = address or os.environ.get("RAY_ADDRESS") or None
        if address is None and digest(key) and os.environ.get(KEY_ENV) != key:
            os.environ[KEY_ENV] = key  # the embedded cluster's readers inherit it
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        extra: dict[str, Any] = {} if address else {
            "num_cpus": max(os.cpu_count() or 1, readers), "include_dashboard": False}
        ray.init(address=address, logging_level="ERROR", log_to_driver=False,
                 configure_logging=False, **extra)
        if address is None:
            watch()  # nothing of the embedded cluster outlives this process
    return ray


def _actor(ray: Any) -> Any:
    return ray.remote(num_cpus=1, max_restarts=0)(Reader)


async def run_readers(recordings: Sequence[Recording], shares: list[int],
                      dealt: list[list[int]], client: Any, *, address: str | None = None,
                      on_done: Callable[[Recording], None] | None = None) -> RayRun:
    ray = connect(address, len(shares), client.api_key)
    cls = _actor(ray)
    here = boot_id()
    finished: set[int] = set()
    actors = [cls.options(scheduling_strategy="SPREAD").remote() for _ in shares]
    try:
        keyless = dataclasses.replace(client, api_key="")
        try:
            async with asyncio.timeout(READY_TIMEOUT_S):
                infos = await asyncio.gather(*(
                    a.setup.remote([(i, recordings[i].variant, recordings[i].request,
                                     recordings[i].base_url) for i in idx], share, keyless,
                                   digest(client.api_key))
                    for a, share, idx in zip(actors, shares, dealt, strict=True)))
        except Exception as e:  # a reader refused (its key): say why, not Ray's traceback
            cause = getattr(e, "cause", None)
            if isinstance(cause, PlaygroundError):
                raise cause from None
            raise
        gens = [a.run.options(num_returns="streaming").remote() for a in actors]
        before = time.perf_counter()
        released = await asyncio.gather(*(a.go.remote() for a in actors))
        after = time.perf_counter()
        mid = (before + after) / 2
        shifts = [0.0 if info["boot_id"] == here else mid - t
                  for info, t in zip(infos, released, strict=True)]
        ends = await asyncio.gather(*(
            _collect(w, g, recordings, dealt[w], infos[w]["node"], shifts[w], finished,
                     on_done) for w, g in enumerate(gens)))
        nodes: dict[str, int] = {}
        for w, info in enumerate(infos):
            nodes[info["node"]] = nodes.get(info["node"], 0) + len(dealt[w])
        return RayRun(len(actors), max((e["span_s"] for e in ends if e), default=0.0),
                      after - before, nodes, sum(e["cpu_s"] for e in ends if e),
                      sum(e["events"] for e in ends if e))
    finally:
        for a in actors:
            with contextlib.suppress(Exception):
                ray.kill(a)
        for i, rec in enumerate(recordings):
            if i not in finished and not rec.finished:
                rec.status = "cancelled"


async def _collect(w: int, gen: Any, recordings: Sequence[Recording], mine: list[int],
                   node: str, shift: float, finished: set[int],
                   on_done: Callable[[Recording], None] | None) -> dict[str, Any] | None:
    sent: set[int] = set()
    try:
        async for ref in gen:
            kind, key, data = await ref
            if kind == "end":
                return key
            if kind == "sent":
                sent.add(key)
                continue
            rec = recordings[key]
            for name, value in data.items():
                setattr(rec, name, value)
            rec.node = node
            rebase(rec, shift)
            finished.add(key)
            if on_done is not None:
                on_done(rec)
    except Exception as e:  # the reader's process or its node is gone: keep what it finished
        for i in mine:
            if i in finished:
                continue
            rec = recordings[i]
            rec.node = node
            what = ("before this request finished" if i in sent
                    else "before it sent this request (never sent)")
            rec.error = StreamError(
                f"reader {w} on Ray node {node[:12]} was lost ({type(e).__name__}) {what}",
                hint="the requests it finished are kept; see the node's Ray logs")
            rec.status = "error"
            finished.add(i)
            if on_done is not None:
                on_done(rec)
    return None

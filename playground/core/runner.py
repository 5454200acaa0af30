"""Run one prompt against N variants, concurrently (default) or one after another ("fair").

Each variant gets its own task, its own clock reading and its own `Recording`. Tasks update
their recording as events arrive and only *notify* the consumer (a non-blocking queue put), so
a slow consumer (a browser) can never delay a timestamp. Closing the iterator cancels the
tasks, which closes their streams, which makes vLLM abort the requests.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from playground.core.events import Clock, Event
from playground.core.metrics import Metrics, RawTimings, derive
from playground.core.pool import ClientPool
from playground.core.request import ChatRequest
from playground.errors import PlaygroundError, RequestTimeout, StreamError
from playground.specs.presets import Variant

Status = Literal["pending", "running", "done", "error", "cancelled"]
Mode = Literal["concurrent", "sequential"]


# An answer's size bound: Qwen3's longest token decodes to 128 characters (a run of spaces),
# so CHARS_PER_TOKEN x max_tokens (DEFAULT_TOKENS when unset) is never reached by a real
# answer -- and a server streaming 50 MB under max_tokens 16 stops at 4,096 characters.
CHARS_PER_TOKEN = 256
DEFAULT_TOKENS = 40_960


@dataclass
class Recording:
    """The live state of one variant's request; also the finished result."""

    variant: Variant
    request: ChatRequest
    base_url: str
    raw: RawTimings
    status: Status = "pending"
    content: str = ""
    reasoning: str = ""
    error: PlaygroundError | None = None
    events: int = 0
    client: str | None = None  # the reader that measured it: "openai" (SDK) or "raw"
    node: str | None = None  # the Ray node whose reader measured it (lab/ray_readers)
    # (time.time(), clock()) read together: maps clock readings to wall-clock time, so other
    # processes on this machine (a browser) can be compared with our stamps.
    clock_origin: tuple[float, float] = field(
        default_factory=lambda: (time.time(), time.perf_counter()))

    def wall_time(self, t: float) -> float:
        wall, perf = self.clock_origin
        return wall + (t - perf)

    def feed(self, ev: Event) -> None:
        """Apply one client event (pure bookkeeping: no I/O, no awaiting)."""
        raw = self.raw
        self.events += 1
        if ev.kind == "sent":
            raw.t_send, self.status = ev.t, "running"
            raw.t_call = ev.t_call
        elif ev.kind == "headers":
            raw.t_headers, raw.http_status = ev.t, ev.status
        elif ev.kind == "chunk":
            self._chunk(ev)
        elif ev.kind == "usage" and ev.usage is not None:
            raw.usage = ev.usage
            raw.server_metrics = ev.server_metrics or raw.server_metrics
        elif ev.kind == "done":
            # a streamed reply with no text at all (one token the detokenizer held back, under
            # max_tokens 1) still ended: then E2E runs to the end of its stream
            if not raw.streaming or raw.t_last is None:
                raw.t_last = ev.t
            self.status = "done"
        elif ev.kind == "error":
            self.error, self.status = ev.error, "error"

    def _chunk(self, ev: Event) -> None:
        raw = self.raw
        if raw.t_first_chunk is None:
            raw.t_first_chunk = ev.t
        cap = CHARS_PER_TOKEN * (self.variant.max_tokens or DEFAULT_TOKENS)
        if len(self.content) + len(self.reasoning) + len(ev.content) + len(ev.reasoning) > cap:
            # no tokenizer writes this much per token: the server is not answering the request
            self.error = StreamError(
                f"the server sent more than {cap:,} characters for max_tokens "
                f"{self.variant.max_tokens or DEFAULT_TOKENS}; the answer is cut here")
            self.status = "error"
            return
        if ev.finish_reason:
            raw.finish_reason = ev.finish_reason
        self.reasoning += ev.reasoning
        self.content += ev.content
        if not raw.streaming:
            return
        # Truthiness, not `is not None`: role-only and "" chunks are not tokens.
        if ev.reasoning and raw.t_first_reasoning is None:
            raw.t_first_reasoning = ev.t
        if ev.content and raw.t_first_content is None:
            raw.t_first_content = ev.t
        if ev.reasoning or ev.content:
            raw.token_times.append(ev.t)
            raw.token_text.append((ev.reasoning, ev.content))
            raw.t_last = ev.t

    @property
    def finished(self) -> bool:
        return self.status in ("done", "error", "cancelled")

    def metrics(self) -> Metrics:
        return derive(self.raw, answered=bool(self.content) if self.finished else None)


def new_recording(variant: Variant, request: ChatRequest, base_url: str) -> Recording:
    return Recording(variant, request, base_url, RawTimings(streaming=request.stream))


async def _drive(pool: ClientPool, rec: Recording, clock: Clock, timeout_s: float,
                 notify: asyncio.Queue[int], index: int) -> None:
    rec.client = pool.resolve(rec.variant.client)
    try:
        backend = pool.get(rec.base_url, rec.variant.client)  # (inside: a client library that
        async with asyncio.timeout(timeout_s):  # refuses its arguments fails this one only)
            async for ev in backend.events(rec.request, clock):
                if ev.error is not None:  # what the server said, less the key it was sent
                    pool.redact(ev.error, rec.base_url)
                rec.feed(ev)
                notify.put_nowait(index)
                if rec.status == "error":  # (an answer past its cap): the stream is closed
                    break
    except TimeoutError:
        rec.error = RequestTimeout(f"no complete answer within {timeout_s:.0f} s",
                                   hint="raise the timeout or "
                                        "lower max_tokens")
        rec.status = "error"
    except asyncio.CancelledError:
        rec.status = "cancelled"
        raise
    except Exception as e:  # recorded on this variant: the others run on
        rec.error = pool.redact(StreamError(f"the request failed in the client: "
                                            f"{type(e).__name__}: {e}"))
        rec.status = "error"
    finally:
        notify.put_nowait(index)


async def run(pool: ClientPool, recordings: Sequence[Recording], *, mode: Mode = "concurrent",
              timeout_s: float = 120.0, clock: Clock = time.perf_counter,
              ) -> AsyncIterator[Sequence[Recording]]:
    """Yield the recordings each time any of them changed; ends when all are finished."""
    notify: asyncio.Queue[int] = asyncio.Queue()
    tasks: list[asyncio.Task[None]] = []

    async def sequential() -> None:
        for i, rec in enumerate(recordings):
            await _drive(pool, rec, clock, timeout_s, notify, i)

    if mode == "sequential":
        tasks.append(asyncio.create_task(sequential()))
    else:
        tasks = [asyncio.create_task(_drive(pool, r, clock, timeout_s, notify, i))
                 for i, r in enumerate(recordings)]
    try:
        while not all(t.done() for t in tasks):
            await notify.get()
            while not notify.empty():  # coalesce bursts into one snapshot
                notify.get_nowait()
            yield recordings
        yield recordings
    finally:
        await _stop(tasks, recordings)


async def _stop(tasks: Sequence[asyncio.Task[None]], recordings: Sequence[Recording]) -> None:
    """Cancel what is still running; a recording that did not finish is "cancelled"."""
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    for rec in recordings:
        if not rec.finished:
            rec.status = "cancelled"


async def run_to_end(pool: ClientPool, recordings: Sequence[Recording], **kw: object
                     ) -> Sequence[Recording]:
    async for _ in run(pool, recordings, **kw):  # type: ignore[arg-type]
        pass
    return recordings


async def run_many(pool: ClientPool, recordings: Sequence[Recording], *, concurrency: int = 1,
                   timeout_s: float = 120.0, clock: Clock = time.perf_counter,
                   on_done=None, on_start=None) -> Sequence[Recording]:
    """Run many independent requests with at most `concurrency` in flight (benchmarks).

    `on_done(rec)` is called as each one finishes, so results can be stored as they arrive;
    `on_start(rec)` as each one takes its slot, just before it is sent.
    """
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(len(recordings)):
        queue.put_nowait(i)
    sink: asyncio.Queue[int] = asyncio.Queue()  # notifications nobody needs to read

    async def worker() -> None:
        while not queue.empty():
            i = queue.get_nowait()
            if on_start is not None:
                on_start(recordings[i])
            await _drive(pool, recordings[i], clock, timeout_s, sink, i)
            while not sink.empty():
                sink.get_nowait()
            if on_done is not None:
                on_done(recordings[i])

    workers = [asyncio.create_task(worker()) for _ in range(max(1, concurrency))]
    try:
        await asyncio.gather(*workers)
    finally:
        for w in workers:
            w.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
    return recordings


async def run_at(pool: ClientPool, recordings: Sequence[Recording], due_s: Sequence[float], *,
                 max_concurrency: int | None = None, timeout_s: float = 120.0,
                 clock: Clock = time.perf_counter, on_done=None) -> float:
    """An open-loop run: request i is due `due_s[i]` seconds after the start (lab/arrivals),
    whatever the others are doing. Each is stamped `t_due` before it waits for a send slot
    (`max_concurrency`: at most that many in flight, as vllm bench's --max-concurrency), so a
    client that cannot keep up shows as send delay (t_send - t_due), never as a later schedule.
    Returns the start (clock reading) that the offsets count from."""
    if len(due_s) != len(recordings):
        raise ValueError(f"{len(due_s)} due times for {len(recordings)} requests")
    sink: asyncio.Queue[int] = asyncio.Queue()  # notifications nobody needs to read
    slots = asyncio.Semaphore(max_concurrency) if max_concurrency else None
    loop = asyncio.get_running_loop()
    start = clock() + 0.05  # every task is created before the first one is due

    async def one(i: int) -> None:
        rec = recordings[i]
        wait = start + due_s[i] - clock()
        if wait > 0:
            await asyncio.sleep(wait)
        rec.raw.t_due = start + due_s[i]
        if slots is not None:
            async with slots:
                await _drive(pool, rec, clock, timeout_s, sink, i)
        else:
            await _drive(pool, rec, clock, timeout_s, sink, i)
        while not sink.empty():
            sink.get_nowait()
        if on_done is not None:
            on_done(rec)

    tasks = [loop.create_task(one(i)) for i in range(len(recordings))]
    try:
        await asyncio.gather(*tasks)
    finally:
        await _stop(tasks, recordings)
    return start

"""The shared live loops of the UI: measurements run on the measuring loop (core/measure_loop,
its own thread) and the UI only samples what they produced, then cancels them on Stop.

- `follow` pumps any async iterator of events (a benchmark, a claims board) into batches the
  Benchmark and Claims tabs render at most every `refresh_s`.
- `until_done` waits for a comparison (live requests, a replay or a ladder) while its live feed
  (ui/live_feed) streams it to the page; Stop and a closed page end it.
- `LiveFrame` holds the value of every output of a run's Gradio event: plain strings, returned
  whole with pre/postprocessing off (Gradio rebuilds every output a handler skips and runs each
  output's postprocess on a worker thread).
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from playground.core.measure_loop import MeasureLoop
from playground.core.runner import Recording
from playground.ui.live_feed import Feed
from playground.ui.render import metrics_md

T = TypeVar("T")


async def follow(measure: MeasureLoop, events: AsyncIterator[T], refresh_s: float = 1.0,
                 poll_s: float = 0.1) -> AsyncIterator[tuple[list[T], bool]]:
    """Yield (events since the last batch, finished) at most every `refresh_s` (and once at
    the end). Closing this generator (Stop, browser gone) cancels the measurement; what it
    stored as it went stays stored. A failure of the measurement is raised at the end."""
    box: queue.Queue[T] = queue.Queue()

    async def pump() -> None:  # on the measuring loop: nothing here waits on the UI
        async for ev in events:
            box.put(ev)

    future = measure.submit(pump())
    batch: list[T] = []
    last = 0.0
    try:
        while True:
            while not box.empty():
                batch.append(box.get_nowait())
            finished = future.done() and box.empty()
            now = time.monotonic()
            if batch and (finished or now - last >= refresh_s):
                last = now
                yield batch, finished
                batch = []
            if finished:
                break
            await asyncio.sleep(poll_s)
        future.result()  # surfaces a failure (e.g. the server became unreachable)
    finally:
        if not future.done():
            future.cancel()


@dataclass
class LiveRun:
    """A run in flight on the measuring loop; `stop()` is the Stop button."""

    future: Future[Any]

    def stop(self) -> None:
        if not self.future.done():
            self.future.cancel()


def submit(measure: MeasureLoop, work: Coroutine[Any, Any, Any]) -> LiveRun:
    return LiveRun(measure.submit(work))


async def until_done(run: LiveRun, recs: Sequence[Recording],
                     on_final: Callable[[Recording], None] | None = None,
                     abandoned: Callable[[], bool] | None = None) -> None:
    """Wait for the run (Stop ends it early). If this waiter is cancelled (browser gone), or
    `abandoned()` says no page follows the run any more (the visitor left), the run is
    cancelled. Either way, return only once every recording is final (bounded by the
    runner's own cleanup). `on_final` gets each recording once, as soon as it is final (the
    run file: what finished is on disk even if the app is killed a moment later)."""
    done: set[int] = set()

    def flush() -> None:
        for i, rec in enumerate(recs):
            if on_final is not None and i not in done and rec.finished:
                done.add(i)
                on_final(rec)

    try:
        waiting = asyncio.wrap_future(run.future)
        while not waiting.done():
            flush()
            if abandoned is not None and abandoned():
                run.stop()
            await asyncio.wait({waiting}, timeout=0.2)
    finally:
        run.stop()
        while not all(r.finished for r in recs):
            await asyncio.sleep(0.01)
        flush()


@dataclass
class LiveFrame:
    """The value of every live output of the Playground tab (answers, reasoning, metrics of
    each column), in `Stage.live_outputs()` order: set when a run starts and when it ends;
    in between, everything the audience sees streams through the run's live feed."""

    n: int
    feed: Feed | None = None
    answer: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.answer = self.answer or [""] * self.n
        self.reasoning = self.reasoning or [""] * self.n
        self.metrics = self.metrics or [""] * self.n

    def values(self) -> list[str]:
        return [*self.answer, *self.reasoning, *self.metrics]

    def ended(self) -> list[str]:
        """The values of a run that ends before it starts (bad input, server down)."""
        if self.feed is not None:
            self.feed.finish()
        return self.values()

    def final(self, recs: Sequence[Recording], where: Sequence[int], *,
              floor_ms: float | None = None, notes: Sequence[str] = ()) -> list[str]:
        now = time.perf_counter()
        for k, (rec, col) in enumerate(zip(recs, where, strict=True)):
            self.answer[col] = rec.content
            self.reasoning[col] = rec.reasoning
            note = notes[k] if k < len(notes) else ""
            self.metrics[col] = note + metrics_md(rec, now, floor_ms)
        return self.values()

"""The shared live loops of the UI: measurements run on the measuring loop (core/measure_loop,
its own thread) and the UI only samples what they produced, then cancels them on Stop.

- `follow` pumps any async iterator of events (a benchmark, a claims board) into batches the
  Benchmark and Claims tabs render at most every `refresh_s`.
- `live_updates` samples a comparison's Recordings (live requests or a replay) into the
  Playground's column updates, text at most every TEXT_INTERVAL_S, figures every
  PLOT_INTERVAL_S: on a 2-core machine, rendering every chunk made the browser fall seconds
  behind and stole CPU from the server (benchmarks/ui_fidelity.py).
"""

from __future__ import annotations

import asyncio
import queue
import time
from collections.abc import AsyncIterator, Coroutine, Sequence
from typing import Any, TypeVar

from playground.core.measure_loop import MeasureLoop
from playground.core.runner import Recording
from playground.outputs import figures
from playground.ui.render import badge_md, error_md, metrics_md, phases_html

T = TypeVar("T")
TEXT_INTERVAL_S = 0.1
PLOT_INTERVAL_S = 0.2


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


def column_updates(slots: Sequence[Any], recs: Sequence[Recording],
                   floor_ms: float | None = None) -> dict[Any, Any]:
    now = time.perf_counter()
    out: dict[Any, Any] = {}
    for c, rec in zip(slots, recs, strict=True):
        out[c.answer] = rec.content
        out[c.reasoning] = rec.reasoning
        out[c.metrics] = metrics_md(rec, now, floor_ms)
        out[c.phases] = phases_html(rec) if rec.finished else ""
        out[c.badge] = badge_md(rec)
        out[c.error] = error_md(rec)
    return out


def final_updates(slots: Sequence[Any], recs: Sequence[Recording], timeline: Any, bars: Any,
                  floor_ms: float | None) -> dict[Any, Any]:
    out = column_updates(slots, recs, floor_ms)
    out.update({timeline: figures.timeline(recs, floor_ms), bars: figures.latency_bars(recs)})
    return out


async def live_updates(measure: MeasureLoop, work: Coroutine[Any, Any, Any],
                       recs: Sequence[Recording], slots: Sequence[Any], timeline: Any,
                       bars: Any, floor_ms: float | None = None) -> AsyncIterator[dict]:
    """Run `work` (a coroutine that fills `recs`: live requests or a replay) on the measuring
    loop and yield sampled UI updates; this loop only reads the recordings."""
    future = measure.submit(work)
    driver = asyncio.wrap_future(future)
    seen = [-1] * len(recs)
    # First figures only after PLOT_INTERVAL_S: the first tokens' text must not queue behind
    # two plotly renders in the browser.
    last_plot = time.perf_counter()
    try:
        while True:
            done = driver.done()
            changed = [i for i, r in enumerate(recs) if r.events != seen[i]]
            if changed or done:
                for i in changed:
                    seen[i] = recs[i].events
                update = column_updates([slots[i] for i in changed],
                                        [recs[i] for i in changed], floor_ms)
                now = time.perf_counter()
                if done or now - last_plot >= PLOT_INTERVAL_S:
                    last_plot = now
                    update[timeline] = figures.timeline(recs, floor_ms)
                    update[bars] = figures.latency_bars(recs)
                yield update
            if done:
                return
            await asyncio.wait({driver}, timeout=TEXT_INTERVAL_S)
    finally:
        if not future.done():  # Stop pressed / browser gone: cancel -> streams close -> abort
            future.cancel()
            while not all(r.finished for r in recs):  # bounded by the runner's own cleanup
                await asyncio.sleep(0.01)
        await asyncio.gather(driver, return_exceptions=True)

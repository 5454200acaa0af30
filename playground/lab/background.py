"""Probe under load: N background requests kept in flight while a benchmark's timed trials run.

Bounded (at most 64 lanes, 256 tokens each) and always stopped: stopping cancels the lanes, which
closes their streams, which makes vLLM abort them.
"""

from __future__ import annotations

import asyncio

from playground.core import request
from playground.core.client import ClientPool
from playground.core.runner import new_recording, run_many
from playground.lab.store import BackgroundRecord
from playground.specs.presets import Variant

BACKGROUND_VARIANT = Variant(name="background-load", stream=True, thinking=False,
                             temperature=0, max_tokens=256, ignore_eos=True)


class BackgroundLoad:
    """N requests kept in flight (each replaced as it finishes) while a probe runs; stopping
    cancels them, which closes their streams, which makes vLLM abort them."""

    def __init__(self, pool: ClientPool, base_url: str, model: str, n: int,
                 timeout_s: float) -> None:
        self.pool, self.base_url, self.model, self.n = pool, base_url, model, n
        self.timeout_s = timeout_s
        self.completed = 0
        self.failed = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def _lane(self, lane: int) -> None:
        i = 0
        while True:
            req = request.build(BACKGROUND_VARIANT, "Write a long story about a city.",
                                self.model, nonce=f"background {lane} {i}")
            rec = new_recording(BACKGROUND_VARIANT, req, self.base_url)
            await run_many(self.pool, [rec], timeout_s=self.timeout_s)
            self.completed += rec.error is None
            self.failed += rec.error is not None
            i += 1

    async def start(self) -> None:
        self._tasks = [asyncio.create_task(self._lane(k)) for k in range(self.n)]
        await asyncio.sleep(0)

    async def stop(self) -> BackgroundRecord:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return BackgroundRecord(requests_in_flight=self.n, completed=self.completed,
                                failed=self.failed, max_tokens=BACKGROUND_VARIANT.max_tokens)

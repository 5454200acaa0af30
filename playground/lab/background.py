"""Probe under load: N background requests kept in flight while a benchmark's timed trials run.

The load comes from vllm bench serve (lab/engine) when the server's Python has vLLM -- an
existing engine, not a home-grown one -- else from the playground's own lanes (at most 64,
256 tokens each). The probe requests stay ours, measured by our runner. Always stopped:
stopping closes the streams, which makes vLLM abort them.
"""

from __future__ import annotations

import asyncio
import math
from typing import Protocol

from playground.core import request
from playground.core.pool import ClientPool
from playground.core.runner import new_recording, run_many
from playground.errors import ValidationFailed
from playground.lab.arrivals import schedule
from playground.lab.engine import (
    BenchServe,
    VllmBenchLoad,
    available,
    tokenizer_for,
    write_prompts,
)
from playground.lab.store import BackgroundRecord
from playground.settings import Settings
from playground.specs.presets import Variant
from playground.specs.rates import Rate

BACKGROUND_PROMPT = "Write a long story about a city."
MAX_OWN_LANES = 64
BACKGROUND_VARIANT = Variant(name="background-load", stream=True, thinking=False,
                             temperature=0, max_tokens=256, ignore_eos=True)


class BackgroundLoad:
    """N requests kept in flight (each replaced as it finishes) while a probe runs -- or, with a
    `rate`, requests arriving on its schedule (lab/arrivals), at most N in flight; stopping
    cancels them, which closes their streams, which makes vLLM abort them."""

    def __init__(self, pool: ClientPool, base_url: str, model: str, n: int,
                 timeout_s: float, rate: Rate | None = None, seed: int = 0) -> None:
        self.pool, self.base_url, self.model, self.n = pool, base_url, model, n
        self.timeout_s, self.rate, self.seed = timeout_s, rate, seed
        self.completed = 0
        self.failed = 0
        self._tasks: list[asyncio.Task[None]] = []

    async def _one(self, nonce: str) -> None:
        req = request.build(BACKGROUND_VARIANT, BACKGROUND_PROMPT, self.model, nonce=nonce)
        rec = new_recording(BACKGROUND_VARIANT, req, self.base_url)
        await run_many(self.pool, [rec], timeout_s=self.timeout_s)
        self.completed += rec.error is None
        self.failed += rec.error is not None

    async def _lane(self, lane: int) -> None:
        i = 0
        while True:
            await self._one(f"background {lane} {i}")
            i += 1

    async def _arrivals(self, rate: Rate) -> None:
        """Open loop: each request sent when the schedule says (in batches of 1,000, each
        seeded on), at most N in flight; a request over the cap waits for a slot."""
        slots = asyncio.Semaphore(self.n)
        loop = asyncio.get_running_loop()
        start, offset, batch = loop.time(), 0.0, 0
        sent: set[asyncio.Task[None]] = set()

        async def capped(nonce: str) -> None:
            async with slots:
                await self._one(nonce)

        try:
            while True:
                due = schedule(rate, 1000, self.seed + batch)
                for k, t in enumerate(due):
                    await asyncio.sleep(max(0.0, start + offset + t - loop.time()))
                    task = asyncio.create_task(capped(f"background {batch} {k}"))
                    sent.add(task)
                    task.add_done_callback(sent.discard)
                offset += due[-1]
                batch += 1
        finally:
            for task in list(sent):
                task.cancel()
            await asyncio.gather(*sent, return_exceptions=True)

    async def start(self) -> None:
        if self.rate is not None and not math.isinf(self.rate.per_s):
            self._tasks = [asyncio.create_task(self._arrivals(self.rate))]
        else:  # closed loop (an infinite rate is N in flight at once: the same)
            self._tasks = [asyncio.create_task(self._lane(k)) for k in range(self.n)]
        await asyncio.sleep(0)

    async def stop(self) -> BackgroundRecord:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        return BackgroundRecord(requests_in_flight=self.n, completed=self.completed,
                                failed=self.failed, max_tokens=BACKGROUND_VARIANT.max_tokens,
                                rate=self.rate.label() if self.rate else None)


class Load(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> BackgroundRecord: ...


async def background_load(settings: Settings, engine: str, n: int, pool: ClientPool,
                          base_url: str, model: str, model_root: str | None, *,
                          rate: Rate | None = None, seed: int = 0) -> Load:
    """The background load of a probe: vllm bench serve or our lanes (`engine` auto picks);
    with `rate`, arriving on that schedule with at most `n` in flight."""
    python = settings.server_python()
    if engine == "auto":  # (vllm bench has no constant arrivals: ours send those)
        constant = rate is not None and rate.kind == "constant"
        engine = ("vllm-bench" if n and not constant
                  and await asyncio.to_thread(available, python) else "playground")
    if engine == "playground" or n == 0:
        if n > MAX_OWN_LANES:
            raise ValidationFailed("background", f"{n} requests: the playground's own lanes "
                                   f"keep at most {MAX_OWN_LANES} in flight, and vllm bench "
                                   f"serve is not importable by {python}; install vLLM there "
                                   f"or lower it")
        return BackgroundLoad(pool, base_url, model, n, settings.timeout_s, rate, seed)
    # the same prompt as our lanes, made unique (no prefix-cache hits), enough for a long probe
    count = min(20_000, 200 * n)
    data = write_prompts(settings.cache_dir / "background" / f"prompts-{n}.jsonl",
                         [f"[background {i}] {BACKGROUND_PROMPT}" for i in range(count)])
    spec = BenchServe(base_url, model, tokenizer_for(model, model_root), concurrency=n,
                      dataset=data, num_prompts=count, output_len=BACKGROUND_VARIANT.max_tokens,
                      rate=rate, seed=seed)
    return VllmBenchLoad(spec, settings.api_key_value(), python,
                         settings.cache_dir / "logs" / "background-vllm-bench.log")

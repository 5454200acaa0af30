"""Probe under load: N background requests kept in flight while a benchmark's timed trials run.

The load comes from vllm bench serve (lab/engine) when the server's Python has vLLM -- an
existing engine, not a home-grown one -- else from the playground's own lanes (at most 64,
256 tokens each). The probe requests stay ours, measured by our runner. Always stopped:
stopping closes the streams, which makes vLLM abort them.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from playground.core import request
from playground.core.pool import ClientPool
from playground.core.runner import new_recording, run_many
from playground.errors import ValidationFailed
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

BACKGROUND_PROMPT = "Write a long story about a city."
MAX_OWN_LANES = 64
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
            req = request.build(BACKGROUND_VARIANT, BACKGROUND_PROMPT, self.model,
                                nonce=f"background {lane} {i}")
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


class Load(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> BackgroundRecord: ...


async def background_load(settings: Settings, engine: str, n: int, pool: ClientPool,
                          base_url: str, model: str, model_root: str | None) -> Load:
    """The background load of a probe: vllm bench serve or our lanes (`engine` auto picks)."""
    python = settings.server_python()
    if engine == "auto":
        engine = ("vllm-bench" if n and await asyncio.to_thread(available, python)
                  else "playground")
    if engine == "playground" or n == 0:
        if n > MAX_OWN_LANES:
            raise ValidationFailed("background", f"{n} requests: the playground's own lanes "
                                   f"keep at most {MAX_OWN_LANES} in flight, and vllm bench "
                                   f"serve is not importable by {python}; install vLLM there "
                                   f"or lower it")
        return BackgroundLoad(pool, base_url, model, n, settings.timeout_s)
    # the same prompt as our lanes, made unique (no prefix-cache hits), enough for a long probe
    count = min(20_000, 200 * n)
    data = write_prompts(settings.cache_dir / "background" / f"prompts-{n}.jsonl",
                         [f"[background {i}] {BACKGROUND_PROMPT}" for i in range(count)])
    spec = BenchServe(base_url, model, tokenizer_for(model, model_root), concurrency=n,
                      dataset=data, num_prompts=count, output_len=BACKGROUND_VARIANT.max_tokens)
    return VllmBenchLoad(spec, settings.api_key_value(), python,
                         settings.cache_dir / "logs" / "background-vllm-bench.log")

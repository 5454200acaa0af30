"""A scripted server behind the core/port seam: compare, bench, claims and the board run their
real code paths against it in milliseconds. Timings are scripted per request (the events carry
their own times), so results are deterministic; a real server is what the integration tests
use."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from playground.core.client import Clock, Event
from playground.core.metrics import Usage
from playground.core.request import ChatRequest
from playground.server.http import ModelInfo, ServerInfo
from playground.server.series import Series, ServerSample
from playground.settings import Settings

MODEL = "Qwen/Qwen3-0.6B"


def _jitter(req: ChatRequest) -> float:
    """0..1, fixed per request body (nonce included): noise the bootstrap can see."""
    digest = hashlib.sha256(repr(req.body()).encode()).digest()
    return digest[0] / 255


@dataclass
class ScriptedBackend:
    ttft_s: float = 0.02  # server time to the first token
    tpot_s: float = 0.01
    calls: list[dict[str, Any]] = field(default_factory=list)

    async def events(self, req: ChatRequest, clock: Clock) -> AsyncIterator[Event]:
        self.calls.append(req.body())
        n = req.max_tokens
        t0 = 100.0 + len(self.calls)
        first = t0 + self.ttft_s * (1 + 0.2 * _jitter(req))
        yield Event("sent", t0)
        yield Event("headers", t0 + 0.001, status=200)
        usage = Usage(prompt_tokens=12, completion_tokens=n)
        if req.stream:
            for i in range(n):
                yield Event("chunk", first + i * self.tpot_s, content="x",
                            finish_reason="length" if i == n - 1 else None)
            end = first + (n - 1) * self.tpot_s
            yield Event("usage", end, usage=usage)
            yield Event("done", end)
        else:
            end = first + (n - 1) * self.tpot_s
            yield Event("chunk", end, content="x" * n, finish_reason="length")
            yield Event("usage", end, usage=usage)
            yield Event("done", end)


@dataclass
class ScriptedPool:
    backend: ScriptedBackend

    def get(self, base_url: str, client: str = "auto") -> ScriptedBackend:
        return self.backend

    def resolve(self, client: str) -> str:
        return "scripted" if client == "auto" else client

    async def aclose(self) -> None:
        pass


@dataclass
class ScriptedPort:
    backend: ScriptedBackend = field(default_factory=ScriptedBackend)
    models: list[str] = field(default_factory=lambda: [MODEL])
    max_model_len: int = 4096
    prompt_tokens: int = 12

    async def info(self, base_url: str, api_key: str | None) -> ServerInfo:
        return ServerInfo(base_url, True, "scripted",
                          [ModelInfo(m, None, self.max_model_len) for m in self.models])

    async def token_count(self, base_url: str, api_key: str, body: dict[str, Any]) -> int:
        return self.prompt_tokens

    def pool(self, settings: Settings, api_key: str | None = None, *,
             auto_client: str = "openai") -> ScriptedPool:
        return ScriptedPool(self.backend)

    async def floor_ms(self, settings: Settings, base_url: str, api_key: str) -> float:
        return 0.5

    def sampler(self, base_url: str, interval_s: float) -> ScriptedSampler:
        return ScriptedSampler()


class ScriptedSampler:
    """Two canned /metrics samples (a real server's are read in the integration tests)."""

    def start(self) -> ScriptedSampler:
        return self

    def stop(self) -> Series:
        return Series(samples=[ServerSample(t=0.0, running=1, waiting=2, kv_usage=0.1,
                                            prefix_queries=0, prefix_hits=0, preemptions=0,
                                            prompt_tokens=0, generation_tokens=0)] * 2)

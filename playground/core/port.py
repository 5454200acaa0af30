"""The seam between the measuring code and a server: what compare, bench, claims and the board
need of one (its facts, a prompt's token count, a pool of chat backends, the physical floor).

`LIVE` is the real thing (server/http, core/client over the openai SDK). Tests pass a scripted
port to get fast, deterministic runs of the same code paths; the real-server tests stay.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from playground.core.events import Clock, Event
from playground.core.pool import ClientName, ClientPool
from playground.core.request import ChatRequest
from playground.server.floor import server_floor
from playground.server.http import ServerInfo, aserver_info, atokenize_count
from playground.server.series import Sampler, SeriesSampler
from playground.server.shared_series import SharedSamplers
from playground.settings import Settings


class ChatBackend(Protocol):
    def events(self, req: ChatRequest, clock: Clock) -> AsyncIterator[Event]: ...


class Pool(Protocol):
    def get(self, base_url: str, client: str = "auto") -> ChatBackend: ...

    def resolve(self, client: str) -> str: ...

    async def aclose(self) -> None: ...


class Port(Protocol):
    async def info(self, base_url: str, api_key: str | None) -> ServerInfo: ...

    async def token_count(self, base_url: str, api_key: str, body: dict[str, Any]
                          ) -> int | None: ...

    def pool(self, settings: Settings, api_key: str | None = None, *,
             auto_client: ClientName = "openai") -> Pool: ...

    async def floor_ms(self, settings: Settings, base_url: str, api_key: str
                       ) -> float | None: ...

    def sampler(self, base_url: str, interval_s: float) -> SeriesSampler: ...


class Live:
    """A real server over HTTP."""

    async def info(self, base_url: str, api_key: str | None) -> ServerInfo:
        return await aserver_info(base_url, api_key)

    async def token_count(self, base_url: str, api_key: str, body: dict[str, Any]
                          ) -> int | None:
        return await atokenize_count(base_url, api_key, body)

    def pool(self, settings: Settings, api_key: str | None = None, *,
             auto_client: ClientName = "openai") -> Pool:
        return ClientPool(api_key or settings.api_key_value(), auto_client=auto_client,
                          key_for=None if api_key else settings.base_url,  # the operator's
                          # key: to the operator's server only
                          connect_timeout_s=settings.connect_timeout_s,
                          read_timeout_s=settings.read_timeout_s, timeout_s=settings.timeout_s)

    async def floor_ms(self, settings: Settings, base_url: str, api_key: str
                       ) -> float | None:
        return await asyncio.to_thread(server_floor, settings, base_url, api_key)

    def sampler(self, base_url: str, interval_s: float) -> Sampler:
        """What the server does during a run: its /metrics every `interval_s` (not started)."""
        return Sampler(base_url, interval_s)


class SharedLive(Live):
    """Live, sampling each server through the app's one sampler per server
    (server/shared_series) instead of one per run: the Benchmark and Claims tabs' port."""

    def __init__(self, samplers: SharedSamplers) -> None:
        self.samplers = samplers

    def sampler(self, base_url: str, interval_s: float) -> SeriesSampler:
        return self.samplers.leased(base_url)


class Remembering(Live):
    """Live, remembering each server's facts (models, limits, version) for `ttl_s`: the
    Playground asks before every run, and on a busy 2-core machine each question costs ms
    that the audience would see between the click and the first token."""

    def __init__(self, ttl_s: float = 15.0) -> None:
        self.ttl_s = ttl_s
        self._info: dict[tuple[str, str], tuple[float, ServerInfo]] = {}

    async def info(self, base_url: str, api_key: str | None) -> ServerInfo:
        key = (base_url, hashlib.sha256((api_key or "").encode()).hexdigest())
        hit = self._info.get(key)
        now = time.monotonic()
        if hit is not None and now - hit[0] < self.ttl_s:
            return hit[1]
        info = await aserver_info(base_url, api_key)
        self._info[key] = (now, info)
        return info


LIVE: Port = Live()

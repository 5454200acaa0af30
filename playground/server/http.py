"""The ONE HTTP boundary to a server, besides chat (which core/client runs on the openai SDK):
health, version, models, /tokenize, /metrics and the raw requests of the API-statement probes.

Built on httpx2, the HTTP stack the openai SDK itself uses. Every call has a sync and an async
form over the same parsing, so async UI handlers never block their event loop, and every call
is bounded as a whole (`timeout_s`), not per socket read: a server that trickles one byte a
second cannot hold a caller longer than the limit. A server that cannot be reached raises
`Unreachable` (an OSError).
"""

from __future__ import annotations

import asyncio
import json
import os
import ssl
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any
from urllib.parse import urlsplit

import httpx2

from playground.errors import PlaygroundError, RequestRejected, ServerUnavailable, redact

MAX_BODY_BYTES = 8 * 2**20  # no probe or model list is larger; more is not a vLLM server

# Connection reuse. vLLM's API server closes a connection idle for 5 s
# (VLLM_HTTP_TIMEOUT_KEEP_ALIVE); a client that keeps it longer can write a request onto a
# connection the server is closing and get "Server disconnected" before any byte comes back.
# Every pool of ours (the SDK path's httpx client, the raw reader's aiohttp connector) lets an
# idle connection go after 4 s, so it is never reused near the server's deadline: a request after
# a pause of 4 s or more opens a new connection (its TTFT then includes a loopback connect).
IDLE_EXPIRY_S = 4.0


def pool_limits() -> httpx2.Limits:
    """The SDK path's pool: the openai SDK's own limits, idle connections let go at
    IDLE_EXPIRY_S."""
    return httpx2.Limits(max_connections=1000, max_keepalive_connections=100,
                         keepalive_expiry=IDLE_EXPIRY_S)


class Unreachable(OSError):
    """Nothing answered in time (refused, DNS, timeout, connection dropped)."""


@dataclass(frozen=True)
class ModelInfo:
    id: str
    root: str | None = None
    max_model_len: int | None = None


@dataclass(frozen=True)
class ServerInfo:
    base_url: str
    healthy: bool
    version: str | None
    models: list[ModelInfo] = field(default_factory=list)

    def model(self, name: str) -> ModelInfo | None:
        return next((m for m in self.models if m.id == name), None)


def server_root(base_url: str) -> str:
    """http://host:port from an OpenAI base URL (.../v1)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def on_this_machine(base_url: str) -> bool:
    """The server is reached over loopback: it shares this machine (its GPUs, its cores)."""
    return urlsplit(base_url).hostname in ("127.0.0.1", "localhost", "::1")


@cache
def _ssl() -> ssl.SSLContext:
    return ssl.create_default_context()


def _headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


@dataclass(frozen=True)
class Reply:
    status: int
    text: str

    def json(self) -> Any:
        """The body as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.text)
        except ValueError:
            return None


def _reason(e: BaseException) -> str:
    """The root cause in words ("[Errno 111] Connection refused"), not the wrapper's."""
    todo, best = [e], None
    while todo:
        cur = todo.pop()
        if isinstance(cur, OSError) and cur.errno is not None:
            return f"[Errno {cur.errno}] {os.strerror(cur.errno)}"
        if isinstance(cur, OSError) and str(cur) and best is None:
            best = str(cur)
        todo += [x for x in (cur.__cause__, cur.__context__) if x is not None]
        todo += list(getattr(cur, "exceptions", ()))
    return best or (f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)


def _timeout(timeout_s: float) -> httpx2.Timeout:
    return httpx2.Timeout(timeout_s, connect=min(timeout_s, 5.0))


def request(method: str, url: str, *, body: Any = None, api_key: str | None = None,
            timeout_s: float = 5.0) -> Reply:
    """One bounded request (the whole call, body included, within `timeout_s`)."""
    deadline = time.monotonic() + timeout_s
    try:
        with httpx2.Client(timeout=_timeout(timeout_s), verify=_ssl(), trust_env=False) as c, \
                c.stream(method, url, json=body, headers=_headers(api_key)) as resp:
            chunks, size = [], 0
            for chunk in resp.iter_bytes():
                chunks.append(chunk)
                size += len(chunk)
                if time.monotonic() > deadline or size > MAX_BODY_BYTES:
                    raise Unreachable(f"{url}: the answer took longer than {timeout_s:g} s "
                                      "(or was too large)")
            return Reply(resp.status_code, b"".join(chunks).decode("utf-8", "replace"))
    except httpx2.HTTPError as e:
        raise Unreachable(_reason(e)) from None


async def arequest(method: str, url: str, *, body: Any = None, api_key: str | None = None,
                   timeout_s: float = 5.0) -> Reply:
    """`request` without blocking the event loop."""
    try:
        async with asyncio.timeout(timeout_s), httpx2.AsyncClient(
                timeout=_timeout(timeout_s), verify=_ssl(), trust_env=False) as c, \
                c.stream(method, url, json=body, headers=_headers(api_key)) as resp:
            chunks, size = [], 0
            async for chunk in resp.aiter_bytes():  # read in pieces: a 300 MB answer stops
                chunks.append(chunk)               # at MAX_BODY_BYTES, not in memory
                size += len(chunk)
                if size > MAX_BODY_BYTES:
                    raise Unreachable(f"{url}: the answer is larger than "
                                      f"{MAX_BODY_BYTES // 2**20} MiB -- not a vLLM server")
            return Reply(resp.status_code, b"".join(chunks).decode("utf-8", "replace"))
    except TimeoutError:
        raise Unreachable(f"{url}: no complete answer within {timeout_s:g} s") from None
    except httpx2.HTTPError as e:
        raise Unreachable(_reason(e)) from None


def get(url: str, *, api_key: str | None = None, timeout_s: float = 5.0) -> Reply:
    return request("GET", url, api_key=api_key, timeout_s=timeout_s)


# --- health, version, models -----------------------------------------------------------------


def _urls(base_url: str) -> tuple[str, str, str]:
    root = server_root(base_url)
    return f"{root}/health", f"{root}/version", f"{base_url.rstrip('/')}/models"


def _info(base_url: str, health: Reply, version: Reply, models: Reply) -> ServerInfo:
    if models.status in (401, 403):
        raise RequestRejected(models.status, _error_text(models))
    data = models.json() if models.status == 200 else None
    if not isinstance(data, dict):  # a web server, but not an OpenAI-compatible API
        raise ServerUnavailable(base_url, f"something answers there, but GET /models gave "
                                f"HTTP {models.status}, not an OpenAI model list -- wrong "
                                "port, or a base URL without /v1?")
    v = version.json() if version.status == 200 else None
    found = [ModelInfo(str(m["id"]), m.get("root"), m.get("max_model_len"))
             for m in data.get("data", []) if isinstance(m, dict) and "id" in m]
    return ServerInfo(base_url, health.status == 200,
                      v.get("version") if isinstance(v, dict) else None, found)


def server_info(base_url: str, api_key: str | None, timeout_s: float = 5.0) -> ServerInfo:
    """Health, version and served models; ServerUnavailable when nothing answers."""
    try:
        replies = [get(u, api_key=api_key if u.endswith("/models") else None,
                       timeout_s=timeout_s) for u in _urls(base_url)]
    except Unreachable as e:
        raise ServerUnavailable(base_url, str(e)) from None
    try:
        return _info(base_url, *replies)
    except PlaygroundError as e:  # what the server said, less the key it was sent
        raise redact(e, api_key) from None


async def aserver_info(base_url: str, api_key: str | None, timeout_s: float = 5.0
                       ) -> ServerInfo:
    """`server_info` without blocking the event loop (the three requests at once)."""
    try:
        replies = await asyncio.gather(*(arequest(
            "GET", u, api_key=api_key if u.endswith("/models") else None, timeout_s=timeout_s)
            for u in _urls(base_url)))
    except Unreachable as e:
        raise ServerUnavailable(base_url, str(e)) from None
    try:
        return _info(base_url, *replies)
    except PlaygroundError as e:  # what the server said, less the key it was sent
        raise redact(e, api_key) from None


def is_healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    try:
        return get(_urls(base_url)[0], timeout_s=timeout_s).status == 200
    except Unreachable:
        return False


async def ais_healthy(base_url: str, timeout_s: float = 2.0) -> bool:
    try:
        return (await arequest("GET", _urls(base_url)[0], timeout_s=timeout_s)).status == 200
    except Unreachable:
        return False


def _error_text(reply: Reply) -> str:
    data = reply.json()
    err = data.get("error") if isinstance(data, dict) else None
    if err is None:
        return reply.text[:200]
    return str(err.get("message") if isinstance(err, dict) else err)


# --- tokenize, /metrics, probes ----------------------------------------------------------------


def _count(reply: Reply) -> int | None:
    data = reply.json() if reply.status == 200 else None
    count = data.get("count") if isinstance(data, dict) else None
    return count if isinstance(count, int) else None


def tokenize_count(base_url: str, api_key: str, body: dict[str, Any],
                   timeout_s: float = 10.0) -> int | None:
    """The token count vLLM's /tokenize gives for `body`, or None when it cannot say."""
    try:
        return _count(request("POST", server_root(base_url) + "/tokenize", body=body,
                              api_key=api_key, timeout_s=timeout_s))
    except Unreachable:
        return None


async def atokenize_count(base_url: str, api_key: str, body: dict[str, Any],
                          timeout_s: float = 10.0) -> int | None:
    try:
        return _count(await arequest("POST", server_root(base_url) + "/tokenize", body=body,
                                     api_key=api_key, timeout_s=timeout_s))
    except Unreachable:
        return None


def metrics_text(base_url: str, timeout_s: float = 5.0) -> str:
    """vLLM's Prometheus /metrics page (server/prom parses it)."""
    reply = get(server_root(base_url) + "/metrics", timeout_s=timeout_s)
    if reply.status != 200:
        raise Unreachable(f"/metrics answered HTTP {reply.status}")
    return reply.text


def sse_events(url: str, body: dict[str, Any], *, api_key: str | None,
               timeout_s: float = 120.0) -> tuple[int, Iterator[dict[str, Any]]]:
    """POST a streaming request; (status, the `data:` events as JSON objects). Raw on purpose:
    the API-statement probes must send exactly the body an article's code would."""
    reply = request("POST", url, body=body, api_key=api_key, timeout_s=timeout_s)
    return reply.status, _events(reply.text) if reply.status == 200 else iter(())


def _events(text: str) -> Iterator[dict[str, Any]]:
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("data: ") and line != "data: [DONE]":
            data = json.loads(line[6:])
            if isinstance(data, dict):
                yield data

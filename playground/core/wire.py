"""The raw reader: the same request body over aiohttp, the SSE stream parsed with one JSON decode
per event -- what `vllm bench serve` does -- into the same `Event`s as the SDK backend.

The openai SDK builds a pydantic object per chunk and reads through httpx; at dozens of streams
in one process that work, not the server, sets the measured TPOT (docs/load.md has the profile).
This reader keeps the per-chunk work to: read a line, stamp it, decode it, hand the text on.
The body is `ChatRequest.body()` -- the body the SDK sends and "View code" shows -- and the
events feed the same `Recording`, so every metric is derived by the same core/metrics.

Stamps: t_send is read just before the request is handed to aiohttp (vllm bench's `st`); each
chunk is stamped when its line has been read, before it is decoded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from playground.core.events import Clock, Event
from playground.core.metrics import Usage
from playground.core.request import ChatRequest
from playground.errors import (
    PlaygroundError,
    RequestRejected,
    RequestTimeout,
    ServerUnavailable,
    StreamError,
)
from playground.server.http import IDLE_EXPIRY_S

try:  # orjson ships with gradio; plain json where it is missing (a bare GPU image)
    import orjson

    loads: Any = orjson.loads

    def dumps(obj: Any) -> bytes:
        return orjson.dumps(obj)
except ImportError:  # pragma: no cover - depends on the environment
    loads = json.loads

    def dumps(obj: Any) -> bytes:
        return json.dumps(obj, ensure_ascii=False).encode("utf-8")


class RawBackend:
    """One server over aiohttp: one session (connection pool) per event loop, no retries."""

    def __init__(self, base_url: str, api_key: str, *, connect_timeout_s: float = 5.0,
                 read_timeout_s: float = 60.0, timeout_s: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._url = f"{self.base_url}/chat/completions"
        self._headers = {"Content-Type": "application/json"}
        if api_key:
            self._headers["Authorization"] = f"Bearer {api_key}"
        self._timeout = aiohttp.ClientTimeout(total=timeout_s, sock_connect=connect_timeout_s,
                                              sock_read=read_timeout_s)
        self._sessions: dict[int, aiohttp.ClientSession] = {}

    def _session(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        s = self._sessions.get(id(loop))
        if s is None or s.closed:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=IDLE_EXPIRY_S,
                                             enable_cleanup_closed=True)
            s = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
            self._sessions[id(loop)] = s
        return s

    async def aclose(self) -> None:
        loop = asyncio.get_running_loop()
        s = self._sessions.pop(id(loop), None)
        if s is not None:
            await s.close()

    async def events(self, req: ChatRequest, clock: Clock) -> AsyncIterator[Event]:
        """Send `req` and yield its events; errors become a final `error` event, not raises."""
        session = self._session()
        data = dumps(req.body())
        t_send = clock()
        announced = False
        try:
            async with session.post(self._url, data=data, headers=self._headers) as resp:
                t_headers = clock()
                announced = True
                yield Event("sent", t_send, t_call=t_send)
                if resp.status != 200:
                    yield Event("error", clock(), error=_rejected(resp.status,
                                                                  await resp.read()))
                    return
                if not req.stream:
                    raw = await resp.read()
                    t = clock()
                    for ev in _response_events(_decode(raw), t):
                        yield ev
                    return
                yield Event("headers", t_headers, status=200)
                finished = False
                try:
                    async for ev in _sse_events(resp, clock):
                        yield ev
                    finished = True
                finally:
                    if not finished:
                        resp.close()  # an unfinished stream: drop the connection; vLLM aborts
        except aiohttp.ServerTimeoutError:  # sock_read (a stall) or sock_connect
            if not announced:
                yield Event("sent", t_send, t_call=t_send)
            err: PlaygroundError = (
                RequestTimeout("the stream stalled: no data within the read timeout",
                               hint="raise the read timeout, or check the server")
                if announced else
                RequestTimeout("the request timed out (no data within the read timeout)",
                               hint="raise the timeout, lower max_tokens, or check the server"))
            yield Event("error", clock(), error=err)
            return
        except (aiohttp.ClientConnectorError, aiohttp.InvalidURL) as e:
            yield Event("sent", t_send, t_call=t_send)
            yield Event("error", clock(), error=ServerUnavailable(self.base_url, str(e)))
            return
        except (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError,
                aiohttp.ClientOSError) as e:
            if not announced:
                yield Event("sent", t_send, t_call=t_send)
                yield Event("error", clock(), error=ServerUnavailable(self.base_url, str(e)))
                return
            yield Event("error", clock(), error=StreamError(
                f"the stream broke after it started: {e or type(e).__name__}",
                hint="the server closed the connection mid-answer -- was it stopped, killed "
                     "or restarted?"))
            return
        except (StreamError, RequestRejected) as e:
            yield Event("error", clock(), error=e)
            return
        yield Event("done", clock())


async def _sse_events(resp: aiohttp.ClientResponse, clock: Clock) -> AsyncIterator[Event]:
    async for line in resp.content:
        t = clock()
        if not line.startswith(b"data:"):
            continue  # blank separators, comments (":" pings), "event:" lines
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return
        data = _decode(payload)
        if not isinstance(data, dict):
            raise StreamError(f"the stream broke: an event that is not a JSON object: "
                              f"{payload[:80]!r}", hint="the server sent an event that is not "
                                                        "JSON")
        if "error" in data:  # vLLM's error event inside a 200 stream (the engine failed)
            detail = data["error"]
            message = detail.get("message") if isinstance(detail, dict) else detail
            raise StreamError(f"the stream failed after it started: {message}")
        for ev in _chunk_events(data, t):
            yield ev


def _decode(payload: bytes) -> Any:
    try:
        return loads(payload)
    except ValueError as e:
        raise StreamError(f"the stream broke: JSONDecodeError: {e}: {payload[:80]!r}",
                          hint="the server sent an event that is not JSON") from e


def _chunk_events(data: dict[str, Any], t: float) -> list[Event]:
    events = []
    choices = data.get("choices")
    if choices:
        choice = choices[0]
        delta = choice.get("delta") or {}
        events.append(Event("chunk", t, reasoning=_reasoning(delta),
                            content=delta.get("content") or "",
                            finish_reason=choice.get("finish_reason")))
    usage = data.get("usage")
    if usage:
        events.append(Event("usage", t, usage=_usage(usage),
                            server_metrics=_server_metrics(data)))
    return events


def _response_events(data: Any, t: float) -> list[Event]:
    if not isinstance(data, dict):
        raise StreamError("the answer is not a JSON object",
                          hint="the server sent a body that is not a chat completion")
    choices = data.get("choices") or [{}]
    msg = choices[0].get("message") or {}
    events = [Event("chunk", t, reasoning=_reasoning(msg), content=msg.get("content") or "",
                    finish_reason=choices[0].get("finish_reason"))]
    if data.get("usage"):
        events.append(Event("usage", t, usage=_usage(data["usage"]),
                            server_metrics=_server_metrics(data)))
    events.append(Event("done", t))
    return events


def _reasoning(obj: dict[str, Any]) -> str:
    # vLLM >= ~0.17 sends `reasoning`; older servers sent `reasoning_content`.
    return obj.get("reasoning") or obj.get("reasoning_content") or ""


def _usage(u: dict[str, Any]) -> Usage:
    details = u.get("completion_tokens_details") or {}
    prompt_details = u.get("prompt_tokens_details") or {}
    return Usage(prompt_tokens=u.get("prompt_tokens"),
                 completion_tokens=u.get("completion_tokens"),
                 reasoning_tokens=details.get("reasoning_tokens"),
                 cached_tokens=prompt_details.get("cached_tokens"))


def _server_metrics(data: dict[str, Any]) -> dict[str, float] | None:
    m = data.get("metrics")
    if not isinstance(m, dict):
        return None
    return {k: float(v) for k, v in m.items() if isinstance(v, int | float)} or None


def _rejected(status: int, raw: bytes) -> RequestRejected:
    """vLLM's error body (`{"error": {...}}` or the older flat form) -> the SDK path's error."""
    try:
        body = loads(raw)
    except ValueError:
        body = None
    if isinstance(body, dict):
        inner = body.get("error")
        if isinstance(inner, dict):
            body = inner
        detail = str(body.get("message") or body.get("error") or raw[:200].decode("utf-8",
                                                                                 "replace"))
        param = body.get("param")
        return RequestRejected(status, detail, param=param if isinstance(param, str) else None)
    return RequestRejected(status, raw[:200].decode("utf-8", "replace") or f"HTTP {status}")

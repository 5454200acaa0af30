"""A fault-injecting HTTP proxy in front of the real vLLM test server.

For the faults a real server cannot produce on demand. The fault is chosen by the first path
segment: `http://127.0.0.1:PORT/<fault>/v1/...` forwards to the real server's `/v1/...` and
then misbehaves:

- `ok` (or `ok-TAG`): a plain pass-through (the control);
- `kill`: streams 3 SSE events, then drops the connection (a server killed mid-stream);
- `stall`: streams 3 SSE events, then sends nothing more and keeps the connection open;
- `malformed`: streams 3 SSE events, then a line that is not JSON;
- `error-event`: streams 3 SSE events, then an error event inside the HTTP 200 stream (what
  vLLM sends when the engine fails mid-request);
- `500`: answers streaming chat requests with vLLM's 500 error body (the engine died); like
  the stream faults, it leaves non-streaming requests alone, so a UI test can run a faulty
  streaming column next to a good non-streaming one on the same base URL;
- `hold`: holds every chat request until `release()` (a server busy warming up, for as long
  as the test needs), then passes it through;
- `hold-sse`: like `hold`, but a streaming chat request gets its 200 and SSE comment lines
  (`: held`, one a second, as vLLM's `--sse-keep-alive-interval` sends) while it is held: a
  stream that stays in flight for as long as the test needs, whatever the client's read
  timeout (`holding` counts those held now; one whose client left is not counted);
- `flaky-metrics`: drops the connection of the first FLAKY_SCRAPES requests for /metrics (a
  scrape that fails while the server is busy), then passes everything through;
- `flood`: streams 3 SSE events, then 64 KiB content deltas until FLOOD_BYTES have gone or the
  client left (a server that sends far more than max_tokens allows; `flooded` counts bytes);
- `huge-models`: answers /v1/models with a list that grows to HUGE_MODELS_BYTES, sent as it is
  made (a model list with no end in sight; `listed` counts bytes);
- `echo-key`: answers chat requests 401 with an error that repeats the key it was sent, as
  OpenAI's "Incorrect API key provided: sk-..." does.

`force(tag, fault)` makes the requests of `tag` (an `ok-TAG` a running app is configured with)
behave as `fault` until `force(tag, None)`.

Every request the proxy saw is kept in `seen` (path and headers), so tests can check what was
sent -- and that nothing was sent when input should have been rejected first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Iterator
from typing import Any

import aiohttp
from aiohttp import web

GOOD_EVENTS = 3
FLAKY_SCRAPES = 3
FLOOD_BYTES = 50 * 2**20
HUGE_MODELS_BYTES = 300 * 2**20


class FaultProxy:
    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/").removesuffix("/v1")
        self.failed_scrapes = 0
        self.holding = 0  # `hold-sse` streams held now (a client that left is not counted)
        self.flooded = 0  # bytes the `flood` fault has sent
        self.listed = 0  # bytes the `huge-models` fault has sent
        self.forced: dict[str, str] = {}
        self.seen: list[dict[str, Any]] = []
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._released: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def url(self, fault: str) -> str:
        return f"http://127.0.0.1:{self.port}/{fault}/v1"

    def start(self, port: int = 0) -> FaultProxy:
        self._want_port = port
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def force(self, tag: str, fault: str | None) -> None:
        """Requests of `tag` behave as `fault` from now on (None: as `tag` again)."""
        if fault is None:
            self.forced.pop(tag, None)
        else:
            self.forced[tag] = fault

    def release(self) -> None:
        """Let the held (`hold`) chat requests, and every later one, through."""
        if self._released is not None:
            self._loop.call_soon_threadsafe(self._released.set)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        self._released = asyncio.Event()
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{fault}/{tail:.*}", self._handle)
        # a client that leaves cancels its handler (a held or stalled request ends with it)
        runner = web.AppRunner(app, handle_signals=False, handler_cancellation=True,
                                shutdown_timeout=1.0)  # stop() does not wait out clients
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", self._want_port)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        # a fresh upstream connection per request: a pooled one that vLLM closed while it sat
        # idle (a held request waits for seconds; on a loaded box a keep-alive expiry shorter
        # than vLLM's is no guarantee) failed the request with "Server disconnected" -> 500
        self._session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=None),
            connector=aiohttp.TCPConnector(force_close=True))
        self._ready.set()
        await self._stop.wait()
        await self._session.close()
        await runner.cleanup()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        fault, tail = request.match_info["fault"], request.match_info["tail"]
        body = await request.read()
        self.seen.append({"fault": fault, "path": "/" + tail, "headers": dict(request.headers),
                          "body": body.decode("utf-8", "replace")})
        is_chat = tail.endswith("chat/completions")
        fault = self.forced.get(fault, fault)
        if fault == "echo-key" and is_chat:
            key = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            return web.json_response({"error": {
                "message": f"Incorrect API key provided: {key}. You can find your API key at "
                           "https://example.invalid/keys.", "type": "invalid_request_error",
                "param": None, "code": 401}}, status=401)
        if fault == "huge-models" and tail.endswith("models"):
            return await self._huge_models(request)
        if fault.startswith("ok"):  # ok, ok-TAG: a pass-through whose requests a test can pick
            fault = "ok"
        if fault == "hold-sse" and is_chat and b'"stream":true' in body.replace(b" ", b""):
            return await self._held_stream(request, tail, body)
        if fault in ("hold", "hold-sse"):
            if is_chat and self._released is not None:
                await self._released.wait()
            fault = "ok"
        if fault == "flaky-metrics":
            if tail == "metrics" and self.failed_scrapes < FLAKY_SCRAPES:
                self.failed_scrapes += 1
                assert request.transport is not None
                request.transport.abort()  # no answer at all: the scrape fails
                return web.Response()
            fault = "ok"
        if fault == "500" and is_chat and b'"stream":true' in body.replace(b" ", b""):
            return web.json_response({"error": {"message": "EngineCore encountered an issue",
                                                "type": "InternalServerError", "param": None,
                                                "code": 500}}, status=500)
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("host", "content-length")}
        async with self._session.request(request.method, f"{self.upstream}/{tail}",
                                         data=body, headers=headers,
                                         params=request.query) as up:
            ctype = up.headers.get("Content-Type", "")
            if "text/event-stream" not in ctype or fault == "ok":
                if "text/event-stream" in ctype:
                    return await self._pass_stream(request, up)
                return web.Response(body=await up.read(), status=up.status,
                                    content_type=ctype.split(";")[0] or None)
            return await self._faulty_stream(request, up, fault)

    async def _huge_models(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        entry = b'{"id": "' + b"m" * 1000 + b'", "object": "model"}, '
        with contextlib.suppress(ConnectionError):
            await resp.write(b'{"object": "list", "data": [')
            while self.listed < HUGE_MODELS_BYTES:
                await resp.write(entry * 64)
                self.listed += len(entry) * 64
            await resp.write(b'{"id": "last"}]}')
            await resp.write_eof()
        return resp

    async def _held_stream(self, request: web.Request, tail: str,
                           body: bytes) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        assert self._released is not None
        self.holding += 1
        try:
            while not self._released.is_set():
                await resp.write(b": held\n\n")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._released.wait(), 1.0)
        finally:
            self.holding -= 1
        headers = {k: v for k, v in request.headers.items()
                   if k.lower() not in ("host", "content-length")}
        async with self._session.post(f"{self.upstream}/{tail}", data=body,
                                      headers=headers) as up:
            async for line in up.content:
                await resp.write(line)
        await resp.write_eof()
        return resp

    async def _pass_stream(self, request: web.Request,
                           up: aiohttp.ClientResponse) -> web.StreamResponse:
        resp = web.StreamResponse(status=up.status,
                                  headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        async for line in up.content:
            await resp.write(line)
        await resp.write_eof()
        return resp

    async def _faulty_stream(self, request: web.Request, up: aiohttp.ClientResponse,
                             fault: str) -> web.StreamResponse:
        resp = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        events = 0
        async for line in up.content:
            await resp.write(line)
            if line.startswith(b"data:"):
                events += 1
            if events >= GOOD_EVENTS and line.strip() == b"":
                break
        if fault == "kill":
            assert request.transport is not None
            request.transport.abort()  # no terminating chunk: the client sees a broken stream
            return resp
        if fault == "stall":
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(3600)
            return resp
        if fault == "flood":
            delta = {"id": "flood", "object": "chat.completion.chunk", "created": 0,
                     "model": "flood", "choices": [{"index": 0, "delta": {
                         "content": "x" * 65536}, "finish_reason": None}]}
            event = b"data: " + json.dumps(delta).encode() + b"\n\n"
            with contextlib.suppress(ConnectionError):
                while self.flooded < FLOOD_BYTES:
                    await resp.write(event)
                    self.flooded += len(event)
        if fault == "malformed":
            await resp.write(b"data: {this is not json\n\n")
        elif fault == "error-event":
            await resp.write(b'data: {"error": {"object": "error", "message": "the engine '
                             b'failed while generating", "type": "InternalServerError", '
                             b'"code": 500}}\n\n')
        await resp.write(b"data: [DONE]\n\n")
        await resp.write_eof()
        return resp


def serving(upstream: str) -> Iterator[FaultProxy]:
    """A started proxy for a fixture: `yield from serving(url)`; stopped afterwards."""
    p = FaultProxy(upstream).start()
    try:
        yield p
    finally:
        p.stop()

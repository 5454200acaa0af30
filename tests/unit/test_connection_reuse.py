"""Connection reuse never races the server's keep-alive deadline.

vLLM (uvicorn) closes a connection idle for 5 s. A pool that keeps it longer can write the next
request onto a connection the server is closing: the request is lost and the client sees
"Server disconnected" before any byte (the grid test's flake). The race itself is a moment a
real server cannot be made to produce on demand, so a small server here plays it: it answers
like a chat endpoint, and a request that arrives on a connection idle for its deadline or
longer is dropped unanswered -- what vLLM does to a request that crosses its close.
"""

from __future__ import annotations

import asyncio
import json

from playground.core import request
from playground.core.wire import RawBackend
from playground.server.http import IDLE_EXPIRY_S
from playground.specs.presets import Variant

SERVER_KEEPALIVE_S = 5.0  # vLLM's VLLM_HTTP_TIMEOUT_KEEP_ALIVE default (checked below)
ANSWER = json.dumps({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": 3, "completion_tokens": 1}}).encode()


class KeepAliveServer:
    """HTTP/1.1 with keep-alive; drops a request that arrives on a connection idle for
    SERVER_KEEPALIVE_S or longer. Counts connections and dropped requests."""

    def __init__(self) -> None:
        self.connections = 0
        self.dropped = 0

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/v1"

    async def stop(self) -> None:
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        loop = asyncio.get_running_loop()
        last_done: float | None = None
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if last_done is not None and loop.time() - last_done >= SERVER_KEEPALIVE_S:
                    self.dropped += 1
                    writer.transport.abort()  # the server was closing it: no answer at all
                    return
                length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                await reader.readexactly(length)
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER))
                await writer.drain()
                last_done = loop.time()
        except (asyncio.IncompleteReadError, ConnectionError):
            return


async def test_a_request_after_a_pause_does_not_reuse_a_connection_the_server_closes() -> None:
    server = KeepAliveServer()
    url = await server.start()
    backend = RawBackend(url, "EMPTY")
    v = Variant(name="n", stream=False, max_tokens=1)
    clock = asyncio.get_running_loop().time
    try:
        errors = []
        for pause_s in (0.0, 0.2, SERVER_KEEPALIVE_S + 0.2):  # reuse, reuse, then past the
            await asyncio.sleep(pause_s)                       # server's deadline
            events = [e async for e in backend.events(request.build(v, "hi", "m"), clock)]
            errors += [str(e.error) for e in events if e.kind == "error"]
            assert any(e.kind == "chunk" and e.content == "ok" for e in events), events
    finally:
        await backend.aclose()
        await server.stop()
    assert errors == [] and server.dropped == 0
    assert server.connections == 2  # reused after short pauses; a new one after the long one


def test_the_pools_let_idle_connections_go_before_vllm_does() -> None:
    import vllm.envs

    assert vllm.envs.VLLM_HTTP_TIMEOUT_KEEP_ALIVE == SERVER_KEEPALIVE_S  # the server's default
    assert IDLE_EXPIRY_S < SERVER_KEEPALIVE_S

"""Timing rules with a scripted clock and scripted chunks (a fake at our own boundary)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from playground.core.client import Backend
from playground.core.metrics import RawTimings, derive
from playground.core.request import build
from playground.core.runner import Recording, new_recording
from playground.lab.stats import bootstrap_ci, percentile, summarize
from playground.specs.presets import Variant


def chunk(content: str | None = None, reasoning: str | None = None, role: str | None = None,
          finish: str | None = None) -> ChatCompletionChunk:
    delta: dict[str, Any] = {}
    if role:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    if reasoning is not None:
        delta["reasoning"] = reasoning
    return ChatCompletionChunk.model_validate({
        "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def usage_chunk(completion: int, prompt: int = 10, metrics: dict | None = None
                ) -> ChatCompletionChunk:
    data: dict[str, Any] = {
        "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion}}
    if metrics:
        data["metrics"] = metrics
    return ChatCompletionChunk.model_validate(data)


class FakeStream:
    def __init__(self, chunks: list[ChatCompletionChunk]) -> None:
        self.chunks, self.closed = chunks, False

    def __aiter__(self) -> FakeStream:
        self._it: Iterator[ChatCompletionChunk] = iter(self.chunks)
        return self

    async def __anext__(self) -> ChatCompletionChunk:
        try:
            return next(self._it)
        except StopIteration:
            raise StopAsyncIteration from None

    async def close(self) -> None:
        self.closed = True


class ScriptedClock:
    """Returns the scripted readings in order (seconds)."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def __call__(self) -> float:
        return self.readings.pop(0)


async def record(response: Any, clock: ScriptedClock, **variant: Any):
    backend = Backend("http://unused/v1", "k")

    async def create(**_: Any) -> Any:
        return response

    backend._client.chat.completions.create = create  # type: ignore[method-assign]
    v = Variant(name="v", **variant)
    rec = new_recording(v, build(v, "p", "m"), backend.base_url)
    async for ev in backend.events(rec.request, clock):
        rec.feed(ev)
    await backend.aclose()
    return rec


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """A local aiohttp app on a free port (a fake server for what vLLM never does): its root."""
    from aiohttp import web

    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def run_one(root: str, client: str, key: str = "k", max_tokens: int = 4,
                  pool: Any = None) -> Recording:
    """One streamed request through the runner (a pool with `key`, or `pool`) to `root`/v1."""
    from playground.core.pool import ClientPool
    from playground.core.runner import run_to_end

    pool = pool or ClientPool(key, read_timeout_s=10.0, connect_timeout_s=5.0, timeout_s=10.0)
    v = Variant(name="v", stream=True, max_tokens=max_tokens, client=client)  # type: ignore[arg-type]
    rec = new_recording(v, build(v, "p", "m"), f"{root}/v1")
    try:
        await run_to_end(pool, [rec], timeout_s=10.0)
    finally:
        await pool.aclose()
    return rec


# clock readings: sent, headers, one per chunk, done
async def test_role_only_chunk_is_not_a_token() -> None:
    stream = FakeStream([chunk(role="assistant", content=""), chunk(content="Hi"),
                         chunk(content="!", finish="stop"), usage_chunk(2)])
    rec = await record(stream, ScriptedClock(0.0, 0.010, 0.050, 0.050, 0.070, 0.090, 0.095),
                       stream=True)
    m = rec.metrics()
    assert rec.raw.t_first_chunk == 0.050
    assert m.first_chunk_ms == pytest.approx(50)
    assert m.ttft_ms == pytest.approx(50)  # same instant as the role chunk, but from "Hi"
    assert rec.content == "Hi!"
    assert stream.closed


async def test_empty_content_chunks_are_not_first_tokens() -> None:
    stream = FakeStream([chunk(role="assistant", content=""), chunk(content=""),
                         chunk(content=""), chunk(content="x"), usage_chunk(3)])
    rec = await record(stream, ScriptedClock(0, 0.01, 0.02, 0.03, 0.04, 0.25, 0.26, 0.27),
                       stream=True)
    assert rec.metrics().ttft_ms == pytest.approx(250)
    assert rec.raw.token_times == [0.25]


async def test_a_streamed_reply_with_no_text_still_has_an_e2e() -> None:
    # vLLM holds back a token that is part of a UTF-8 character: under max_tokens 1 the whole
    # stream can carry no text (seen on the random-weight demo model)
    stream = FakeStream([chunk(role="assistant", content=""), chunk(content="", finish="length"),
                         usage_chunk(1)])
    rec = await record(stream, ScriptedClock(0, 0.01, 0.02, 0.03, 0.04, 0.05), stream=True)
    m = rec.metrics()
    assert rec.status == "done" and m.ttft_ms is None and m.tpot_ms is None
    assert m.e2e_ms == pytest.approx(50) and rec.raw.token_times == []


async def test_usage_trailer_does_not_extend_e2e() -> None:
    stream = FakeStream([chunk(content="a"), chunk(content="b"), chunk(content="c"),
                         usage_chunk(3)])
    rec = await record(stream, ScriptedClock(0, 0.01, 0.1, 0.2, 0.3, 5.0, 5.1), stream=True)
    m = rec.metrics()
    assert m.e2e_ms == pytest.approx(300)
    assert m.completion_tokens == 3  # from usage, not from counting chunks


async def test_e2e_minus_ttft_equals_sum_of_gaps() -> None:
    times = [0.0, 0.005, 0.120, 0.135, 0.151, 0.170, 0.230, 0.231]
    stream = FakeStream([chunk(reasoning="r"), chunk(reasoning="s"), chunk(content="a"),
                         chunk(content="b", finish="length"), chunk(content="c"),
                         usage_chunk(9)])
    rec = await record(stream, ScriptedClock(*times, 0.3, 0.31), stream=True, thinking=True)
    m = rec.metrics()
    assert m.e2e_ms - m.ttft_ms == pytest.approx(sum(m.itl_ms))
    assert len(m.itl_ms) == 4
    assert m.ttft_ms == pytest.approx(120)  # first reasoning token
    assert m.ttfa_ms == pytest.approx(151)  # first answer token
    assert rec.reasoning == "rs" and rec.content == "abc"
    assert rec.raw.finish_reason == "length"


async def test_tpot_and_decode_rate_use_server_token_counts() -> None:
    # 3 chunks but the server says 11 tokens (a chunk may carry several tokens)
    stream = FakeStream([chunk(content="aaa"), chunk(content="bbb"), chunk(content="ccc"),
                         usage_chunk(11)])
    rec = await record(stream, ScriptedClock(0, 0.01, 0.1, 0.3, 0.6, 0.7, 0.8), stream=True)
    m = rec.metrics()
    assert m.tpot_ms == pytest.approx((600 - 100) / 10)
    assert m.decode_tok_s == pytest.approx(10 / 0.5)


async def test_reasoning_content_fallback_field() -> None:
    c = chunk(content=None)
    c.choices[0].delta.__pydantic_extra__ = {"reasoning_content": "old"}  # type: ignore[union-attr]
    rec = await record(FakeStream([c, usage_chunk(1)]), ScriptedClock(0, 0.01, 0.1, 0.2, 0.3),
                       stream=True)
    assert rec.reasoning == "old"
    assert rec.metrics().ttft_ms == pytest.approx(100)


async def test_per_request_server_metrics_are_kept() -> None:
    stream = FakeStream([chunk(content="a"), usage_chunk(1, metrics={
        "time_to_first_token_ms": 12.5, "queue_time_ms": 0.3})])
    rec = await record(stream, ScriptedClock(0, 0.01, 0.1, 0.2, 0.3), stream=True)
    assert rec.raw.server_metrics == {"time_to_first_token_ms": 12.5, "queue_time_ms": 0.3}


async def test_non_streaming_has_no_ttft_and_e2e_is_the_visible_wait() -> None:
    resp = ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "{}", "reasoning": "hmm"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}})
    rec = await record(resp, ScriptedClock(0.0, 1.8, 1.81), stream=False)
    m = rec.metrics()
    assert m.ttft_ms is None and m.ttfa_ms is None and m.tpot_ms is None
    assert m.e2e_ms == pytest.approx(1800)
    assert m.visible_wait_ms == pytest.approx(1800)
    assert (rec.content, rec.reasoning, m.completion_tokens) == ("{}", "hmm", 7)


def test_missing_values_are_none_not_zero() -> None:
    m = derive(RawTimings(streaming=True, t_send=1.0))
    assert (m.ttft_ms, m.e2e_ms, m.tpot_ms, m.decode_tok_s) == (None, None, None, None)
    assert m.itl_ms == []


def test_a_reply_in_one_chunk_has_tpot_zero_not_none() -> None:
    """A busy server can merge every token into one chunk: TPOT is 0, as vllm bench reports
    it (the load path counts such rows apart), and no decode rate is made up."""
    from playground.core.metrics import Usage
    from playground.ui.render import floor_text

    raw = RawTimings(streaming=True, t_send=1.0, t_first_content=1.02, t_last=1.02,
                     token_times=[1.02], usage=Usage(completion_tokens=32))
    m = derive(raw)
    assert m.tpot_ms == 0.0 and m.decode_tok_s is None
    assert floor_text(m.tpot_ms, 1.5) == "**TPOT** 0.0 ms (every token arrived in one chunk)"


def test_percentiles_and_summary() -> None:
    data = [1.0, 2.0, 3.0, 4.0, 100.0]
    assert percentile(data, 50) == 3.0
    assert percentile(data, 0) == 1.0 and percentile(data, 100) == 100.0
    assert percentile([], 50) is None
    s = summarize([*data, None])
    assert s.n == 5 and s.p50 == 3.0 and s.mean == pytest.approx(22.0)


def test_bootstrap_ci_contains_the_median() -> None:
    data = [float(x) for x in range(1, 40)]
    lo, hi = bootstrap_ci(data)  # type: ignore[misc]
    assert lo <= 20.0 <= hi
    assert bootstrap_ci([1.0]) is None


async def test_the_visible_wait_is_the_answers_and_reasoning_counts_only_when_shown() -> None:
    """Streamed: reasoning at 0.1 s, the answer at 0.5 s -- the audience (reasoning panel
    collapsed) sees the answer's first character at 500 ms; with the reasoning shown, at 100 ms.
    A reply that is all reasoning has no visible answer at all, streamed or not."""
    both = FakeStream([chunk(reasoning="hm"), chunk(content="A"), usage_chunk(2)])
    rec = await record(both, ScriptedClock(0, 0, 0.1, 0.5, 0.6, 0.7), stream=True)
    m = rec.metrics()
    assert (m.ttft_ms, m.ttfa_ms) == (pytest.approx(100), pytest.approx(500))
    assert m.visible_wait_ms == pytest.approx(500) and m.answered is True
    assert m.first_visible_ms(show_reasoning=True) == pytest.approx(100)
    only = FakeStream([chunk(reasoning="hm"), chunk(reasoning="m"), usage_chunk(2)])
    m = (await record(only, ScriptedClock(0, 0, 0.1, 0.2, 0.3, 0.4), stream=True)).metrics()
    assert m.visible_wait_ms is None and m.answered is False
    assert m.first_visible_ms(show_reasoning=True) == pytest.approx(100)
    resp = ChatCompletion.model_validate({
        "id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "finish_reason": "length",
                     "message": {"role": "assistant", "content": None, "reasoning": "hmm"}}],
        "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12}})
    m = (await record(resp, ScriptedClock(0.0, 1.8, 1.81), stream=False)).metrics()
    assert m.e2e_ms == pytest.approx(1800) and m.visible_wait_ms is None
    assert m.first_visible_ms(show_reasoning=True) == pytest.approx(1800)


async def test_a_server_that_echoes_the_key_gets_it_cut_from_the_error() -> None:
    """"Incorrect API key provided: sk-..." was shown to every visitor and written to run
    files: the pool's key is cut from whatever the server says."""
    from playground.core.pool import ClientPool
    from playground.errors import RequestRejected, redact

    key = "sk-live-9f8e7d6c5b4a"
    err = RequestRejected(401, f"Incorrect API key provided: {key}. Check it.")
    ClientPool(key).redact(err)
    for text in (str(err), err.message, err.detail, repr(err.args)):
        assert key not in text and "[redacted]" in text
    assert redact(RequestRejected(400, "EMPTY is fine"), "EMPTY").detail == "EMPTY is fine"


@pytest.mark.parametrize("client", ["raw", "openai"])
async def test_a_run_against_a_server_that_echoes_the_key_keeps_no_key(client: str) -> None:
    """Over HTTP, through the runner: a server (a fake: vLLM never echoes a key) answers 401
    quoting the bearer token it got; the recording's error and its run-file line hold none."""
    import json

    from aiohttp import web

    from playground.core.record import RequestRecord

    key = "sk-live-0a1b2c3d4e5f"

    async def echo(request: web.Request) -> web.Response:
        got = request.headers.get("Authorization", "").removeprefix("Bearer ")
        return web.json_response({"error": {"message": f"Incorrect API key provided: {got}",
                                            "type": "invalid_request_error"}}, status=401)

    app = web.Application()
    app.router.add_post("/v1/chat/completions", echo)
    async with serving(app) as root:
        rec = await run_one(root, client, key)
    assert rec.error is not None and "Incorrect API key provided: [redacted]" in str(rec.error)
    assert key not in json.dumps(RequestRecord.of(rec).line(), default=str)


@pytest.mark.parametrize("client", ["raw", "openai"])
async def test_an_answer_far_larger_than_its_max_tokens_is_cut(client: str) -> None:
    """A server streaming 50 MB under max_tokens 16 made a 52,428,800-character answer and a
    100 MiB run file: an answer stops at CHARS_PER_TOKEN x max_tokens, named, the stream
    closed (a fake server: vLLM never does this)."""
    import json

    from aiohttp import web

    from playground.core.runner import CHARS_PER_TOKEN

    sent = [0]

    async def flood(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        piece = {"id": "x", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "delta": {"content": "y" * 1000},
                              "finish_reason": None}]}
        try:
            for _ in range(2000):  # 2 MB, if nobody stops reading
                await resp.write(f"data: {json.dumps(piece)}\n\n".encode())
                sent[0] += 1
        except (ConnectionResetError, RuntimeError):
            pass
        return resp

    app = web.Application()
    app.router.add_post("/v1/chat/completions", flood)
    async with serving(app) as root:
        rec = await run_one(root, client, max_tokens=16)
    assert len(rec.content) <= CHARS_PER_TOKEN * 16
    assert rec.error is not None and "more than 4,096 characters" in str(rec.error)


async def test_a_model_list_larger_than_the_cap_is_refused_not_read_whole() -> None:
    """A 300 MB /v1/models took the app from 965 to 1,867 MiB on the async path: it is read in
    pieces and refused past MAX_BODY_BYTES (the sync path already was)."""
    from aiohttp import web

    from playground.errors import ServerUnavailable
    from playground.server.http import MAX_BODY_BYTES, aserver_info

    async def huge(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        try:
            await resp.write(b'{"data": ["')
            for _ in range(MAX_BODY_BYTES // 2**20 * 4):  # 4x the cap
                await resp.write(b"x" * 2**20)
        except (ConnectionResetError, RuntimeError):
            pass
        return resp

    async def health(_r: web.Request) -> web.Response:
        return web.Response(text="")

    async def version(_r: web.Request) -> web.Response:
        return web.json_response({"version": "x"})

    app = web.Application()
    app.router.add_get("/v1/models", huge)
    app.router.add_get("/health", health)
    app.router.add_get("/version", version)
    async with serving(app) as root:
        with pytest.raises(ServerUnavailable, match="larger than 8 MiB"):
            await aserver_info(f"{root}/v1", None, timeout_s=30.0)


async def test_a_client_that_refuses_its_arguments_fails_its_variant_only() -> None:
    """The SDK raises while it is built (no API key at all): that raised before the runner's
    bookkeeping, and the run waited forever for a variant that had already died."""
    from aiohttp import web

    from playground.core.pool import ClientPool
    from playground.core.runner import run_to_end

    async def refuse(request: web.Request) -> web.Response:
        return web.json_response({"error": {"message": "no"}}, status=403)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", refuse)
    async with serving(app) as root:
        pool = ClientPool("", read_timeout_s=10.0, connect_timeout_s=5.0, timeout_s=10.0)
        recs = [new_recording(v, build(v, "p", "m"), f"{root}/v1") for v in (
            Variant(name="sdk", stream=True, client="openai"),
            Variant(name="raw", stream=True, client="raw"))]
        try:
            async with asyncio.timeout(30):
                await run_to_end(pool, recs, timeout_s=10.0)
        finally:
            await pool.aclose()
    assert "OpenAIError" in str(recs[0].error) and recs[0].status == "error"
    assert "HTTP 403" in str(recs[1].error)

"""Async backend over openai.AsyncOpenAI: one client per base URL, typed events, our errors.

The stream is turned into `Event`s stamped by an injected clock at the moment each chunk is
read. Nothing here waits on a consumer except the next `yield`; the runner consumes events
immediately and renderers read snapshots, so the UI never sits between socket and clock.
"""

from __future__ import annotations

import contextvars
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai

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
from playground.server import http

# Set per request (per task) by Backend.events; the HTTP client's request hook calls it at the
# moment the request is handed to the transport -- docs/measurement.md's t_send.
_ON_SEND: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "on_send", default=None)


async def _request_hook(_request: object) -> None:
    on_send = _ON_SEND.get()
    if on_send is not None:
        on_send()


class Backend:
    """One server: a shared AsyncOpenAI (connection pool), no retries, explicit timeouts."""

    def __init__(self, base_url: str, api_key: str, *, connect_timeout_s: float = 5.0,
                 read_timeout_s: float = 60.0, timeout_s: float = 120.0) -> None:
        self.base_url = base_url.rstrip("/")
        timeout, transport = sdk_transport(connect_timeout_s=connect_timeout_s,
                                           read_timeout_s=read_timeout_s, timeout_s=timeout_s)
        self._client = openai.AsyncOpenAI(
            base_url=self.base_url,
            api_key=api_key,
            max_retries=0,  # a retried request would silently inflate TTFT
            timeout=timeout,
            http_client=transport,
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def events(self, req: ChatRequest, clock: Clock) -> AsyncIterator[Event]:
        """Send `req` and yield its events; errors become a final `error` event, not raises."""
        create = self._client.chat.completions.create
        sent: list[float] = []
        _ON_SEND.set(lambda: sent.append(clock()))
        t_before = clock()  # fallback when no request hook ran (e.g. a fake transport)
        announced = False
        try:
            if req.stream:
                stream = await create(**req.kwargs, extra_body=req.extra_body)
                t_headers = clock()
                announced = True
                yield Event("sent", sent[0] if sent else t_before, t_call=t_before)
                yield Event("headers", t_headers, status=200)
                async for ev in self._stream_events(stream, clock):
                    yield ev
            else:
                resp = await create(**req.kwargs, extra_body=req.extra_body)
                t_resp = clock()
                announced = True
                yield Event("sent", sent[0] if sent else t_before, t_call=t_before)
                for ev in _response_events(resp, t_resp):  # ends with its own "done"
                    yield ev
                return
        except openai.APIError as e:
            t = clock()
            if not announced:
                yield Event("sent", sent[0] if sent else t_before, t_call=t_before)
            yield Event("error", t, error=map_error(e, self.base_url))
            return
        except (StreamError, RequestTimeout) as e:
            yield Event("error", clock(), error=e)
            return
        finally:
            _ON_SEND.set(None)
        yield Event("done", clock())

    async def _stream_events(self, stream: Any, clock: Clock) -> AsyncIterator[Event]:
        try:
            async for chunk in stream:
                t = clock()
                if chunk.usage is not None and not chunk.choices:
                    yield Event("usage", t, usage=_usage(chunk.usage),
                                server_metrics=_server_metrics(chunk))
                    continue
                for ev in _chunk_events(chunk, t):
                    yield ev
        except openai.APITimeoutError as e:  # the stream stalled after it started
            raise RequestTimeout("the stream stalled: no data within the read timeout",
                                 hint="raise the read timeout, or check the server") from e
        except openai.APIConnectionError as e:  # the connection dropped after it started
            raise StreamError(f"the stream broke after it started: {_root_cause(e)}",
                              hint="the server closed the connection mid-answer -- was it "
                                   "stopped, killed or restarted?") from e
        except openai.APIError:
            raise
        except Exception as e:  # not an SSE JSON event (malformed stream, a proxy in between)
            raise StreamError(f"the stream broke: {type(e).__name__}: {e}",
                              hint="the server sent an event that is not JSON") from e
        finally:
            await stream.close()  # closing aborts the request in vLLM


def _chunk_events(chunk: Any, t: float) -> list[Event]:
    events = []
    for choice in chunk.choices[:1]:
        delta = choice.delta
        reasoning = _reasoning(delta)
        events.append(Event("chunk", t, reasoning=reasoning, content=delta.content or "",
                            finish_reason=choice.finish_reason))
    if chunk.usage is not None:  # continuous usage stats: usage rides on token chunks
        events.append(Event("usage", t, usage=_usage(chunk.usage),
                            server_metrics=_server_metrics(chunk)))
    return events


def _response_events(resp: Any, t: float) -> list[Event]:
    msg = resp.choices[0].message if resp.choices else None
    events = [Event("chunk", t, reasoning=_reasoning(msg) if msg else "",
                    content=(msg.content or "") if msg else "",
                    finish_reason=resp.choices[0].finish_reason if resp.choices else None)]
    if resp.usage is not None:
        events.append(Event("usage", t, usage=_usage(resp.usage),
                            server_metrics=_server_metrics(resp)))
    events.append(Event("done", t))
    return events


def _reasoning(obj: Any) -> str:
    # vLLM >= ~0.17 sends `reasoning`; older servers sent `reasoning_content`.
    extra = getattr(obj, "model_extra", None) or {}
    return (getattr(obj, "reasoning", None) or extra.get("reasoning")
            or getattr(obj, "reasoning_content", None) or extra.get("reasoning_content") or "")


def _usage(u: Any) -> Usage:
    details = getattr(u, "completion_tokens_details", None)
    prompt_details = getattr(u, "prompt_tokens_details", None)
    return Usage(
        prompt_tokens=u.prompt_tokens,
        completion_tokens=u.completion_tokens,
        reasoning_tokens=getattr(details, "reasoning_tokens", None) if details else None,
        cached_tokens=getattr(prompt_details, "cached_tokens", None) if prompt_details else None,
    )


def _server_metrics(obj: Any) -> dict[str, float] | None:
    extra = getattr(obj, "model_extra", None) or {}
    m = extra.get("metrics")
    return {k: float(v) for k, v in m.items() if isinstance(v, int | float)} if m else None


def map_error(e: openai.APIError, base_url: str) -> PlaygroundError:
    """openai's exceptions -> ours, with the parameter name when the server gave one."""
    if isinstance(e, openai.APITimeoutError):
        return RequestTimeout("the request timed out (no data within the read timeout)",
                              hint="raise the timeout, lower max_tokens, or check the server")
    if isinstance(e, openai.APIConnectionError):
        return ServerUnavailable(base_url, _root_cause(e))
    if isinstance(e, openai.APIStatusError):
        body = e.body
        if isinstance(body, dict):
            detail = str(body.get("message") or body.get("error") or e.message)
            param = body.get("param")
        else:
            detail, param = str(body or e.message), None
        return RequestRejected(e.status_code, detail, param=param)
    body = e.body if isinstance(e.body, dict) else {}
    return StreamError(f"the stream failed after it started: {body.get('message') or e.message}")


def _root_cause(e: BaseException) -> str:
    while e.__cause__ is not None:
        e = e.__cause__
    return str(e) or type(e).__name__


# What another library built on the SDK (LangChain) needs from it, so that only this module
# imports openai: the same timeouts and request hook, and the SDK's errors mapped to ours.
SdkError = openai.APIError


def sdk_transport(*, connect_timeout_s: float, read_timeout_s: float, timeout_s: float
                  ) -> tuple[Any, Any]:
    """(openai.Timeout, an httpx client whose request hook calls `on_send`'s callback) -- what
    the SDK path uses, and what LangChain is given."""
    timeout = openai.Timeout(timeout_s, connect=connect_timeout_s, read=read_timeout_s)
    return timeout, openai.DefaultAsyncHttpx2Client(timeout=timeout, limits=http.pool_limits(),
                                                     event_hooks={"request": [_request_hook]})


def on_send(callback: Callable[[], None] | None) -> None:
    """In this task, call `callback` when the next request reaches the transport (t_send)."""
    _ON_SEND.set(callback)


def is_connection_error(e: BaseException) -> bool:
    return isinstance(e, openai.APIConnectionError)

"""The LangChain reader: langchain-openai's ChatOpenAI against the same base URL, same body.

Seeds 000 and 001 call vLLM through LangChain and claim the plain openai SDK is faster. This
backend makes that a measurable variant (`client: langchain`): the request is the pure builder's
`ChatRequest` handed to `ChatOpenAI.astream` / `ainvoke` (its parameters as call kwargs, vLLM's
extras as `extra_body`), and every chunk LangChain yields is stamped the moment LangChain hands
it over -- so the stamps include whatever LangChain does per chunk. The clock rules are the
SDK path's: `t_send` when the request reaches the HTTP transport (a hook on the httpx client
LangChain is given), `t_call` when our code called LangChain (so `pre_send_ms` is LangChain's own
time before the request left).

What LangChain does not pass on is not invented: ChatOpenAI drops vLLM's `reasoning` field
(its docstring says so), so reasoning chunks arrive as empty chunks and a LangChain variant's
TTFT is its first answer token; it exposes no response headers (no `t_headers`).

Only this module imports langchain_openai, and only when a variant asks for it (an optional
extra: `pip install 'qwen-latency-lab[langchain]'`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from playground.core.client import (
    SdkError,
    is_connection_error,
    map_error,
    on_send,
    sdk_transport,
)
from playground.core.events import Clock, Event
from playground.core.metrics import Usage
from playground.core.request import ChatRequest
from playground.errors import PlaygroundError, RequestTimeout, StreamError, ValidationFailed

INSTALL_HINT = "pip install 'qwen-latency-lab[langchain]' (langchain-openai)"


def available() -> bool:
    try:
        import langchain_openai  # noqa: F401
    except ImportError:
        return False
    return True


class LangChainBackend:
    """One server through ChatOpenAI: one model object per (model name, streaming), reused the
    way an application keeps its `llm`; no retries, the SDK path's timeouts."""

    def __init__(self, base_url: str, api_key: str, *, connect_timeout_s: float = 5.0,
                 read_timeout_s: float = 60.0, timeout_s: float = 120.0) -> None:
        if not available():
            raise ValidationFailed("client", "'langchain' needs langchain-openai, which is not "
                                   f"installed: {INSTALL_HINT}")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout, self._http = sdk_transport(
            connect_timeout_s=connect_timeout_s, read_timeout_s=read_timeout_s,
            timeout_s=timeout_s)
        self._models: dict[tuple[str, bool], Any] = {}

    def _model(self, name: str, streaming: bool) -> Any:
        key = (name, streaming)
        if key not in self._models:
            from langchain_openai import ChatOpenAI
            from pydantic import SecretStr

            self._models[key] = ChatOpenAI(
                model=name, base_url=self.base_url, api_key=SecretStr(self._api_key),
                max_retries=0, timeout=self._timeout, streaming=streaming,
                stream_usage=streaming, http_async_client=self._http)
        return self._models[key]

    async def aclose(self) -> None:
        self._models.clear()
        await self._http.aclose()

    async def events(self, req: ChatRequest, clock: Clock) -> AsyncIterator[Event]:
        """Send `req` through LangChain; errors become a final `error` event, not raises."""
        sent: list[float] = []
        on_send(lambda: sent.append(clock()))
        t_call = clock()
        model = self._model(str(req.kwargs["model"]), req.stream)
        messages = req.kwargs["messages"]
        call = call_kwargs(req)
        announced = False

        def sent_event() -> Event:
            return Event("sent", sent[0] if sent else t_call, t_call=t_call)

        try:
            if req.stream:
                async for chunk in model.astream(messages, **call):
                    t = clock()
                    if not announced:
                        announced = True
                        yield sent_event()
                    for ev in chunk_events(chunk, t):
                        yield ev
            else:
                msg = await model.ainvoke(messages, **call)
                t = clock()
                announced = True
                yield sent_event()
                for ev in chunk_events(msg, t):
                    yield ev
                yield Event("done", t)
                return
        except SdkError as e:
            t = clock()
            if not announced:
                yield sent_event()
            error: PlaygroundError = map_error(e, self.base_url)
            if req.stream and announced and is_connection_error(e):
                error = StreamError(f"the stream broke after it started: {e}",
                                    hint="the server closed the connection mid-answer")
            yield Event("error", t, error=error)
            return
        except PlaygroundError as e:
            if not announced:
                yield sent_event()
            yield Event("error", clock(), error=e)
            return
        except TimeoutError as e:
            if not announced:
                yield sent_event()
            yield Event("error", clock(), error=RequestTimeout(f"timed out: {e}"))
            return
        except Exception as e:  # LangChain wraps or re-raises what it could not parse
            if not announced:
                yield sent_event()
            yield Event("error", clock(), error=StreamError(
                f"LangChain failed: {type(e).__name__}: {e}",
                hint="the server's reply did not parse as a chat completion"))
            return
        finally:
            on_send(None)
        if not announced:  # a stream that ended with no chunk at all
            yield sent_event()
        yield Event("done", clock())


def call_kwargs(req: ChatRequest) -> dict[str, Any]:
    """The request's parameters as LangChain call kwargs (model, messages and the stream flag
    are the model object's and the call's own); vLLM's extras travel as `extra_body`."""
    skip = {"model", "messages", "stream", "stream_options"}
    call = {k: v for k, v in req.kwargs.items() if k not in skip}
    if req.extra_body:
        call["extra_body"] = dict(req.extra_body)
    return call


def chunk_events(msg: Any, t: float) -> list[Event]:
    """One LangChain message (chunk) -> our events. Reasoning is not passed on by LangChain."""
    content = msg.content if isinstance(msg.content, str) else ""
    meta = getattr(msg, "response_metadata", None) or {}
    events = [Event("chunk", t, content=content, finish_reason=meta.get("finish_reason"))]
    usage = getattr(msg, "usage_metadata", None)
    if usage:
        details = usage.get("output_token_details") or {}
        cached = (usage.get("input_token_details") or {}).get("cache_read")
        events.append(Event("usage", t, usage=Usage(
            prompt_tokens=usage.get("input_tokens"), completion_tokens=usage.get("output_tokens"),
            reasoning_tokens=details.get("reasoning"), cached_tokens=cached)))
    return events

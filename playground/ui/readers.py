"""Who still reads an API job's results, so that a job no one reads is stopped.

A `/compare` call over HTTP is a Gradio queue job: the caller POSTs `call/compare` (or
`queue/join`, as gradio_client does) and reads the results from a second, streaming GET --
`call/compare/<event_id>`, or the session's `queue/data?session_hash=<hash>`. Gradio runs the
job whether or not anyone ever opens that stream; a caller who fires POSTs and never reads would
keep the operator's server busy for nothing.

- `ReaderWatch` (ASGI middleware) counts the open result streams per event id and per session
  hash, and hands each POSTed job a `Ticket` that learns the job's event id from Gradio's
  answer (the job itself only sees its session hash).
- `Readers.unread_s(...)` says how long a job has had no open stream; the job stops after
  `Settings.gone_after_s` without one (from its start, or from the moment its last reader
  went away).
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

MAX_KEYS = 4096  # closed streams remembered (least recently closed forgotten first)
TICKET = "reader_ticket"  # where a POSTed job's ticket sits in the request's state

_CALL_READ = re.compile(r"/call/(?:v2/)?[^/]+/([^/]+)/?$")
_CALL_POST = re.compile(r"/call/(?:v2/)?[^/]+/?$")


@dataclass
class Ticket:
    """What a POSTed job learns of itself: its event id, once Gradio has answered the POST."""

    event_id: str = ""
    body: bytes = b""


class Readers:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._open: dict[str, int] = {}
        self._closed: OrderedDict[str, float] = OrderedDict()  # key -> when its last closed

    def opened(self, key: str) -> None:
        self._open[key] = self._open.get(key, 0) + 1

    def closed(self, key: str) -> None:
        left = self._open.get(key, 1) - 1
        if left > 0:
            self._open[key] = left
            return
        self._open.pop(key, None)
        self._closed[key] = self.clock()
        self._closed.move_to_end(key)
        while len(self._closed) > MAX_KEYS:
            self._closed.popitem(last=False)

    def reading(self, keys: Iterable[str]) -> bool:
        return any(self._open.get(k, 0) > 0 for k in keys if k)

    def unread_s(self, keys: Iterable[str], since: float) -> float:
        """Seconds in which none of `keys` had an open result stream, counted from `since`
        (when the job started) or from the last close after it; 0 while one is open."""
        keys = [k for k in keys if k]
        if self.reading(keys):
            return 0.0
        last = max([since, *(self._closed.get(k, since) for k in keys)])
        return max(0.0, self.clock() - last)


def job_keys(request: Any) -> list[str]:
    """The keys a Gradio job's results are read under: its session hash and, for a job
    POSTed through `ReaderWatch`, its event id. `request` is the job's gr.Request."""
    keys = [str(getattr(request, "session_hash", "") or "")]
    scope = getattr(getattr(request, "request", None), "scope", None) or {}
    state = scope.get("state")
    ticket = state.get(TICKET) if isinstance(state, dict) else None
    if isinstance(ticket, Ticket):
        keys.append(ticket.event_id)
    return [k for k in keys if k]


def _read_key(method: str, path: str, query: bytes) -> str:
    """The key a GET of a result stream reads under, or "" for any other request."""
    if method != "GET":
        return ""
    m = _CALL_READ.search(path)
    if m:
        return m.group(1)
    if path.rstrip("/").endswith("/queue/data"):
        return (parse_qs(query.decode("latin-1")).get("session_hash") or [""])[0]
    return ""


class ReaderWatch:
    """ASGI middleware: counts open result streams; tickets POSTed jobs with their event id."""

    def __init__(self, app: Any, readers: Readers) -> None:
        self.app, self.readers = app, readers

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        method, path = scope.get("method", ""), str(scope.get("path", ""))
        key = _read_key(method, path, scope.get("query_string", b""))
        if key:
            self.readers.opened(key)
            try:
                await self.app(scope, receive, send)
            finally:
                self.readers.closed(key)
            return
        if method == "POST" and (_CALL_POST.search(path) or path.endswith("/queue/join")):
            ticket = Ticket()
            scope.setdefault("state", {})[TICKET] = ticket

            async def learn(message: Any) -> None:
                if message.get("type") == "http.response.body" and len(ticket.body) < 4096:
                    ticket.body += message.get("body", b"")
                    with contextlib.suppress(ValueError, AttributeError):
                        ticket.event_id = str(json.loads(ticket.body).get("event_id") or "")
                await send(message)

            await self.app(scope, receive, learn)
            return
        await self.app(scope, receive, send)

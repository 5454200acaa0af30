"""Who reads an API job's results (ui/readers): counted streams, the grace, the ticket."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from playground.ui.readers import TICKET, Readers, ReaderWatch, Ticket, _read_key, job_keys


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_unread_time_counts_from_the_start_or_the_last_reader_gone() -> None:
    clock = Clock()
    r = Readers(clock)
    assert r.unread_s(["s1"], since=100.0) == 0.0
    clock.t = 110.0
    assert r.unread_s(["s1"], since=100.0) == 10.0  # never opened: from the job's start
    r.opened("e1")
    r.opened("e1")
    clock.t = 200.0
    assert r.unread_s(["s1", "e1"], since=100.0) == 0.0  # a reader of either key is open
    r.closed("e1")
    assert r.unread_s(["s1", "e1"], since=100.0) == 0.0  # one of two still reads
    r.closed("e1")
    clock.t = 203.0
    assert r.unread_s(["s1", "e1"], since=100.0) == 3.0  # from the last close
    assert r.unread_s(["", "e1"], since=201.0) == 2.0  # a close before the job began: since


def test_result_streams_are_recognised_by_path() -> None:
    assert _read_key("GET", "/gradio_api/call/compare/abc123", b"") == "abc123"
    assert _read_key("GET", "/gradio_api/call/v2/compare/abc123/", b"") == "abc123"
    assert _read_key("GET", "/gradio_api/queue/data", b"session_hash=s9") == "s9"
    assert _read_key("POST", "/gradio_api/call/compare/abc123", b"") == ""
    assert _read_key("GET", "/gradio_api/info", b"") == ""


def _drive(mw: ReaderWatch, method: str, path: str, query: bytes = b"") -> dict[str, Any]:
    scope: dict[str, Any] = {"type": "http", "method": method, "path": path,
                             "query_string": query}

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(_: Any) -> None:
        pass

    asyncio.run(mw(scope, receive, send))
    return scope


def test_the_middleware_counts_readers_while_they_read_and_tickets_posted_jobs() -> None:
    clock, seen = Clock(), []
    readers = Readers(clock)

    async def gradio(scope: Any, receive: Any, send: Any) -> None:
        seen.append(readers.reading(["ev7"]))  # while the stream is being served
        if scope["method"] == "POST":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body",
                        "body": json.dumps({"event_id": "ev7"}).encode()})

    mw = ReaderWatch(gradio, readers)
    scope = _drive(mw, "POST", "/gradio_api/call/compare")
    ticket = scope["state"][TICKET]
    assert isinstance(ticket, Ticket) and ticket.event_id == "ev7"
    _drive(mw, "GET", "/gradio_api/call/compare/ev7")
    assert seen == [False, True] and not readers.reading(["ev7"])  # closed again after

    class Raw:  # what a job's gr.Request holds: the POST's request, with its scope
        def __init__(self, scope: dict[str, Any]) -> None:
            self.scope = scope

    class GrRequest:
        session_hash = "sess"
        request = Raw(scope)

    assert job_keys(GrRequest()) == ["sess", "ev7"]

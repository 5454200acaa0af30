"""The pages' live channels: which page follows which run, and who may open one.

Each page opens `live/<page token>` when it loads and keeps it open (ui/live_feed says why); a
run registers its `Feed` on that page's `Channel`. On a shared page every visitor is a stranger,
so a channel lives only while its page follows it or a run is in flight on it, an open page's
channel is never dropped to make room for another, the table is bounded (MAX_FEEDS), one address
holds at most PER_ADDRESS streams, and the route answers 401 without a login.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from playground.ui import ids
from playground.ui.live_feed import ORPHAN_S, TOKEN_RE, Feed, stream
from playground.ui.login import logged_in

MAX_FEEDS = 256  # pages followed at once; past it a new page waits for one to close
PER_ADDRESS = 16  # live streams one address may hold open (tabs of one visitor)
CLOSED_S = 5.0  # a channel with no stream and no run this long belongs to a closed page
KEEPALIVE_S = 15.0


class Channel:
    """One page's live connection, opened when the page loads and kept: at the click there
    is no connection to set up (a new one waited behind the browser's busy main thread for
    0.1-0.6 s on a 2-core machine). Each run of that page replaces `feed` and wakes it."""

    def __init__(self) -> None:
        self.feed: Feed | None = None
        self.wake = asyncio.Event()
        self.used = time.monotonic()
        self.followers = 0  # open streams of this page (0: the page is closed or reconnecting)
        self.left = float("-inf")  # when the last one closed


def _peer(request: Request) -> str:
    return request.client.host if request.client else ""


class Feeds:
    """The pages that follow their runs live, by the page's token. A page's channel lives
    while the page follows it or a run is in flight on it; a closed page's channel goes, and
    no page that is still open is ever dropped to make room: past MAX_FEEDS a new page is
    refused (it sees its runs when they end), and one address holds at most PER_ADDRESS
    streams (`address`: whose they are -- the app's visitor rule, trusted proxies included)."""

    def __init__(self, instrument: bool = False, address: Callable[[Request], str] = _peer,
                 gone_after_s: float = ORPHAN_S) -> None:
        self._channels: dict[str, Channel] = {}
        self.gone_after_s = gone_after_s  # a run no page follows this long is stopped
        self.instrument = instrument  # stamp messages for benchmarks/ui_fidelity (Settings)
        self.address = address
        self.streams: dict[str, int] = {}  # open live streams by address

    def _prune(self) -> None:
        """Drop the channels of closed pages: nothing follows them and no run is in flight.
        A channel that never carried a run goes at once (a page reconnecting gets a new one
        and loses nothing); one whose run ended waits CLOSED_S for its page to reconnect and
        read the end. So pages opened and dropped at once (256 of them were a flood that
        locked every new page out for 5 s) cannot fill the table."""
        now = time.monotonic()
        for token, ch in list(self._channels.items()):
            if ch.followers or (ch.feed is not None and not ch.feed.done):
                continue
            if ch.feed is None or now - max(ch.used, ch.left) > CLOSED_S:
                del self._channels[token]

    def _channel(self, token: str) -> Channel | None:
        """The page's channel, made on first use; None when MAX_FEEDS open pages hold them."""
        ch = self._channels.get(token)
        if ch is None:
            if len(self._channels) >= MAX_FEEDS:
                self._prune()
            if len(self._channels) >= MAX_FEEDS:
                return None
            ch = self._channels[token] = Channel()
        ch.used = time.monotonic()
        return ch

    def open(self, token: str) -> Feed:
        """A feed for the run a page (`token`, from FOLLOW_JS) is starting. A malformed token
        (or a full table) gets a feed nobody follows: that page then sees the run when it
        ends, not live."""
        feed = Feed(grace_s=self.gone_after_s)
        ch = self._channel(token) if TOKEN_RE.fullmatch(token or "") else None
        if ch is not None:
            if ch.feed is not None:
                ch.feed.finish()
            ch.feed = feed
            feed.channel = ch
            ch.wake.set()
        return feed

    def route(self, path: str = f"/{ids.LIVE_ROUTE}{{token}}") -> Route:
        return Route(path, self._endpoint, methods=["GET"])

    async def _endpoint(self, request: Request) -> Response:
        token = request.path_params.get("token", "")
        if not logged_in(request):
            return PlainTextResponse("not logged in", status_code=401)
        if not TOKEN_RE.fullmatch(token):
            return PlainTextResponse("bad live token", status_code=400)
        who = self.address(request)
        if self.streams.get(who, 0) >= PER_ADDRESS:
            return PlainTextResponse(f"too many live pages from one address (at most "
                                     f"{PER_ADDRESS}): close some tabs", status_code=429)
        ch = self._channel(token)
        if ch is None:
            return PlainTextResponse("too many pages follow runs live right now: this page "
                                     "shows each run when it ends", status_code=503)
        return StreamingResponse(self._counted(who, follow_channel(ch, self.instrument)),
                                 media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache",
                                          "X-Accel-Buffering": "no"})

    async def _counted(self, who: str, stream_: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
        self.streams[who] = self.streams.get(who, 0) + 1
        try:
            async for chunk in stream_:
                yield chunk
        finally:
            self.streams[who] -= 1
            if not self.streams[who]:
                del self.streams[who]
            await stream_.aclose()  # type: ignore[attr-defined]


async def follow_channel(ch: Channel, instrument: bool = False) -> AsyncIterator[bytes]:
    """A page's stream: every run it starts, one after another; a comment now and then so a
    closed page is noticed (the write fails and this generator is closed)."""
    ch.followers += 1
    done: Feed | None = None
    try:
        yield b": live\n\n"
        while True:
            feed = ch.feed
            if feed is not None and feed is not done:
                async for chunk in stream(feed, instrument=instrument):
                    yield chunk
                done = feed
                continue
            ch.wake.clear()
            try:
                await asyncio.wait_for(ch.wake.wait(), timeout=KEEPALIVE_S)
            except TimeoutError:
                yield b": keep-alive\n\n"
    finally:  # the page closed (or lost) its stream: a run it was watching is stopped
        ch.followers -= 1
        ch.left = time.monotonic()
        feed = ch.feed
        if feed is not None and not feed.done and feed.on_close is not None:
            feed.on_close()

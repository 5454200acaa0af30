"""The live channel: a run's answers, reasoning, status lines, headline and timeline go to the
browser over one Server-Sent-Events stream per page, written straight into the page by a few
lines of page JavaScript (static/live.js, see `head_js`), instead of through Gradio's event
messages.

Why: Gradio's frontend handles every message of a streaming event by refreshing the loading
state of every component any event has touched (a structured clone of each one's props, plotly
figures included). On this app's page that cost 35-120 ms of the browser's main thread per
message, so text sent per chunk fell 0.5-1.2 s behind on a 2-core machine (profile and numbers:
docs/fidelity.md). This channel's cost per message is one JSON parse and a textarea write.

- Each page opens `live/<page token>` when it loads (a random token of its own: the capability)
  and keeps it open. A run's Gradio event receives that token from the page (FOLLOW_JS) and
  registers a `Feed` (its recordings, and the column each is shown in) on the page's `Channel`.
- The stream sends appended text only, at once for a column's first text, then at most once
  per FRAME_S; the Gradio event still delivers the final text, so its state and the page agree.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Protocol, TypedDict

from playground.core.runner import Recording
from playground.outputs.live_svg import latency_bars, live_timeline
from playground.ui import ids
from playground.ui.render import headline_html, status_html

FRAME_S = 0.03
POLL_S = 0.004
HEARTBEAT_S = 0.25  # status lines (elapsed time), the headline and the live timeline
WAIT_S = 30.0  # the page connects at the click, before the run is registered and prepared
ORPHAN_S = 20.0  # a run no page has followed this long is stopped (Settings.gone_after_s)
TOKEN_RE = re.compile(r"[A-Za-z0-9_-]{16,64}")


class Followed(Protocol):
    """What a feed knows of its page's channel (ui/live_channels.Channel)."""

    followers: int  # open streams of the page
    left: float  # when the last one closed


class LiveMessage(TypedDict, total=False):
    """One message of the live stream (a Server-Sent Event's data, JSON); static/live.js reads
    it. Every field is optional."""

    text: list[list[object]]  # [[element id, start, piece], ...]: text appended to a box
    status: dict[str, str]  # column -> its live status line (HTML)
    headline: str  # the presenter's headline row (HTML)
    timeline: str  # the token timeline (SVG)
    bars: str  # the latency bars (SVG; the run's last message)
    replay: str  # with the views: a replay's label, "" for a live run (the connection line)
    end: bool  # the run is over
    handover: bool  # with `end`, for a run started by the stage's Run: fetch its results
    sent_at: float  # wall-clock send time: an instrumented app only (benchmarks/ui_fidelity)


@dataclass
class Feed:
    """One run, as its page follows it."""

    recs: Sequence[Recording] = ()
    where: Sequence[int] = ()
    notes: dict[int, str] = field(default_factory=dict)  # column -> why it was not sent (HTML)
    started: float = field(default_factory=time.perf_counter)
    opened: float = field(default_factory=time.monotonic)
    done: bool = False
    on_close: Callable[[], None] | None = None  # the page went away mid-run: stop the run
    channel: Followed | None = None  # the page's connection (None: a malformed token)
    show_reasoning: bool = False  # the page shows reasoning: the headline counts it
    handover: bool = False  # a stage Run: its end asks the page to fetch the results
    replay: str = ""  # a replay's label ("replay of <recording> (<machine>, <date>)"); "" live
    titles: dict[int, str] = field(default_factory=dict)  # column -> what it ran (a step)
    grace_s: float = ORPHAN_S  # no page for this long: the visitor left

    def finish(self) -> None:
        self.done = True

    def abandoned(self, grace_s: float | None = None) -> bool:
        """No page has followed this run for `grace_s` (default: the feed's): its visitor left
        (or never had a page: a script driving the UI's events); the run is stopped, its slot
        freed."""
        grace_s = self.grace_s if grace_s is None else grace_s
        now = time.monotonic()
        ch = self.channel
        if ch is None:
            return now - self.opened > grace_s
        return ch.followers == 0 and now - max(ch.left, self.opened) > grace_s


def _event(data: object) -> bytes:
    return f"data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n".encode()


def _stamped(msg: LiveMessage, instrument: bool) -> LiveMessage:
    if instrument:  # sent at (wall clock): for benchmarks/ui_fidelity only
        msg["sent_at"] = round(time.time(), 4)
    return msg


def _end(feed: Feed) -> LiveMessage:
    msg = LiveMessage(end=True)
    if feed.handover:
        msg["handover"] = True
    return msg


def _views(feed: Feed, final: bool) -> LiveMessage:
    """Status lines, headline and timeline (and, at the end, the latency bars)."""
    now = time.perf_counter()
    # at the end, a column's own box says why it was not sent: the line does not repeat it
    status = {str(col): "" if final else escape(note) for col, note in feed.notes.items()}
    status.update({str(col): "" if final else status_html(rec, now, feed.started,
                                                          replay=bool(feed.replay))
                   for rec, col in zip(feed.recs, feed.where, strict=False)})
    out = LiveMessage(status=status,
                      headline=headline_html(feed.recs, now, feed.show_reasoning,
                                             replay=feed.replay, where=feed.where,
                                             titles=feed.titles, notes=feed.notes),
                      timeline=live_timeline(feed.recs, now), replay=feed.replay)
    if final:
        out["bars"] = latency_bars(feed.recs)
    return out


async def stream(feed: Feed, *, frame_s: float = FRAME_S, poll_s: float = POLL_S,
                 instrument: bool = False) -> AsyncIterator[bytes]:
    """Appended text of every column as [[element id, start, text], ...] ("text"), at once for a
    column's first text and at most once per `frame_s`; the views on every heartbeat and
    state change; the final views and {"end": true} when the run is over."""
    sent: dict[str, int] = {}
    last = last_views = float("-inf")
    state: list[tuple[str, bool]] = []
    deadline = time.monotonic() + WAIT_S
    while not feed.recs and not feed.done and time.monotonic() < deadline:
        await asyncio.sleep(poll_s)
    if not feed.recs:  # nothing was sent (bad input, server down): the hand-over says why
        yield _event(_end(feed))
        return
    while True:
        done = feed.done
        parts = []
        first = False
        for rec, col in zip(feed.recs, feed.where, strict=False):
            for prefix, text in ((ids.ANSWER, rec.content), (ids.REASONING, rec.reasoning)):
                key = ids.col(prefix, col)
                have = sent.get(key, 0)
                if len(text) > have:
                    parts.append([key, have, text[have:]])
                    first = first or have == 0
        now = time.monotonic()
        msg = LiveMessage()
        if parts and (done or first or now - last >= frame_s):
            for key, start, text in parts:
                sent[key] = start + len(text)
            last = now
            msg["text"] = parts
            if first and not done:  # a column's first text goes alone: the page paints it
                yield _event(_stamped(msg, instrument))  # before laying out any view
                msg = LiveMessage()
        now_state = [(r.status, bool(r.content or r.reasoning)) for r in feed.recs]
        if done or now_state != state or now - last_views >= HEARTBEAT_S:
            state, last_views = now_state, now
            msg.update(_views(feed, done))
        if msg:
            yield _event(_stamped(msg, instrument))
        if done:
            yield _event(_end(feed))
            return
        await asyncio.sleep(poll_s)


# The page side (static/live.js, a real file: its message schema is documented there and in
# LiveMessage): the element ids come from ui/ids.py, handed over as window.qllIds.
SCRIPT = Path(__file__).parent / "static" / "live.js"


def head_js() -> str:
    """The page's <head> addition: the ids, then the live script."""
    ids_json = json.dumps(ids.for_script())
    return (f"<script>window.qllIds = {ids_json};</script>\n"
            f"<script>\n{SCRIPT.read_text('utf-8')}</script>")

# The `js` of every event that starts a run: a new token, followed at once, as the first input.
FOLLOW_JS = "(token, ...rest) => [window.qllFollow ? window.qllFollow() : '', ...rest]"

"""The page script (playground/ui/static/live.js) in real Chromium against the real producer
(ui/live_feed.stream, served by its own route) with a scripted recording: no vLLM, no Gradio,
seconds. It proves that text is painted while the run is still going, that a box follows its
end unless its reader scrolled up, that the views and the end arrive, that Stop is live only
while a run is followed, that the next run fades the last one's markup without moving it, that
a normal page carries no benchmark instrumentation, that a replay's speed sets its pace (on a
scripted clock), that Stop keeps what was shown, that a Run's request leaves only after the
browser drew the click, and that a Stop before it left cancels it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator

import pytest
import uvicorn
from playwright.sync_api import Page, expect
from starlette.applications import Starlette
from starlette.responses import HTMLResponse
from starlette.routing import Route

from playground.core.client import Event
from playground.core.metrics import RawTimings, Usage
from playground.core.request import build
from playground.core.runner import Recording
from playground.lab.replay import from_history, play, recordings
from playground.server.managed import free_port
from playground.specs.presets import Variant
from playground.ui import ids
from playground.ui.live import LiveRun
from playground.ui.live_channels import Feeds
from playground.ui.live_feed import Feed, head_js
from tests.unit.test_replay import recorded

pytestmark = pytest.mark.browser

BODY = (f'<div id="{ids.col(ids.ANSWER, 0)}"><textarea></textarea></div>'
        f'<div id="{ids.col(ids.LIVE_STATUS, 0)}" class="live-status"></div>'
        f'<div id="{ids.HEADLINE}"></div><div id="{ids.TIMELINE}"></div>'
        f'<div id="{ids.BARS}"></div><button id="{ids.STAGE_STOP}" disabled>Stop</button>'
        f'<div id="{ids.CONNECTION}">vLLM at http://127.0.0.1:8000/v1</div>')


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, Feeds]]:
    """A page with one column's boxes and the live script, and the live route, on a port of
    its own (uvicorn in a thread)."""
    feeds = Feeds()

    async def index(_: object) -> HTMLResponse:
        return HTMLResponse(f"<html><head>{head_js()}</head><body>{BODY}</body></html>")

    app = Starlette(routes=[Route("/", index), feeds.route()])
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    thread = threading.Thread(target=lambda: asyncio.run(server.serve()), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/", feeds
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture()
def page(browser) -> Iterator[Page]:  # type: ignore[no-untyped-def]
    """A page of its own (not the session app's: no vLLM, no Gradio here)."""
    ctx = browser.new_context()
    yield ctx.new_page()
    ctx.close()


def test_text_is_painted_while_the_run_goes_on_and_the_views_follow(
        served: tuple[str, Feeds], page: Page) -> None:
    url, feeds = served
    page.goto(url)
    stop = page.locator(f"#{ids.STAGE_STOP}")
    expect(stop).to_be_disabled()  # nothing to stop yet
    token = page.evaluate("window.qllFollow()")  # what the Run click hands to the app
    expect(stop).to_be_enabled()
    v = Variant(name="scripted", stream=True, thinking=False, max_tokens=16)
    rec = Recording(v, build(v, "hi", "m"), "http://scripted/v1", RawTimings(streaming=True))
    feed = feeds.open(token)
    rec.feed(Event("sent", time.perf_counter()))
    feed.recs, feed.where = [rec], [0]
    box = page.locator(f"#{ids.col(ids.ANSWER, 0)} textarea")
    rec.feed(Event("chunk", time.perf_counter(), content="Hello "))
    # on screen while the run is still going (not at its end: the feed is not finished)
    expect(box).to_have_value("Hello ", timeout=10_000)
    expect(page.locator(f"#{ids.col(ids.LIVE_STATUS, 0)}")).to_contain_text("running")
    expect(page.locator(f"#{ids.HEADLINE}")).to_contain_text("first answer character")
    assert not feed.done and rec.status == "running"
    assert page.locator(f"#{ids.CONNECTION}").get_attribute("data-replay") is None  # live
    rec.feed(Event("chunk", time.perf_counter(), content="world"))
    expect(box).to_have_value("Hello world", timeout=10_000)
    # a box follows its end while text arrives, unless its reader scrolled up
    lines = "".join(f"\nline {i}" for i in range(200))
    rec.feed(Event("chunk", time.perf_counter(), content=lines))
    expect(box).to_have_value("Hello world" + lines, timeout=10_000)
    page.wait_for_function("(b) => b.scrollTop > 0 && b.scrollTop + b.clientHeight >= "
                           "b.scrollHeight - 4", arg=box.element_handle(), timeout=10_000)
    box.evaluate("(b) => { b.scrollTop = 0; }")  # the reader goes back to the top
    page.wait_for_function("(b) => b.dataset.away === '1'", arg=box.element_handle())
    rec.feed(Event("chunk", time.perf_counter(), content="\nmore"))
    expect(box).to_have_value("Hello world" + lines + "\nmore", timeout=10_000)
    # three frames later (the script scrolls a box in the frame after its text): still there
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => "
                  "requestAnimationFrame(() => requestAnimationFrame(r))))")
    assert box.evaluate("(b) => b.scrollTop") == 0
    rec.feed(Event("usage", time.perf_counter(), usage=Usage(completion_tokens=203)))
    rec.feed(Event("done", time.perf_counter()))
    feed.finish()
    expect(page.locator(f"#{ids.BARS} svg")).to_contain_text("E2E", timeout=10_000)
    expect(page.locator(f"#{ids.col(ids.LIVE_STATUS, 0)}")).to_have_text("")  # cleared
    expect(stop).to_be_disabled()  # the run is over
    # a normal page neither receives send stamps nor keeps a message log
    assert page.evaluate("window.qllFeedLog === undefined")

    # The next click fades what this run drew and keeps its place (emptying it would move the
    # page in the frame that should show the first text); the new run's markup replaces it, and
    # what the new run never redraws (here a status line of a column it does not have) is
    # emptied at its end.
    headline = page.locator(f"#{ids.HEADLINE}")
    extra = ids.col(ids.LIVE_STATUS, 1)
    page.evaluate(f"() => document.body.insertAdjacentHTML('beforeend', "
                  f"'<div id=\"{extra}\" class=\"live-status\">done 9 ms</div>')")
    height = headline.evaluate("(e) => e.offsetHeight")
    assert height > 0
    token = page.evaluate("window.qllFollow()")
    expect(box).to_have_value("")
    expect(headline).to_have_class("stale")
    expect(page.locator(f"#{extra}")).to_have_class("live-status stale")
    expect(headline).to_contain_text("first answer character")  # the last run's, faded
    assert headline.evaluate("(e) => e.offsetHeight") == height
    again = Recording(v, build(v, "hi", "m"), "http://scripted/v1", RawTimings(streaming=True))
    feed = feeds.open(token)
    again.feed(Event("sent", time.perf_counter()))
    feed.recs, feed.where = [again], [0]
    again.feed(Event("chunk", time.perf_counter(), content="Again"))
    expect(box).to_have_value("Again", timeout=10_000)
    expect(headline).not_to_have_class("stale", timeout=10_000)  # this run's own headline
    expect(page.locator(f"#{extra}")).to_have_text("done 9 ms")  # not redrawn yet: kept
    again.feed(Event("done", time.perf_counter()))
    feed.finish()
    expect(page.locator(f"#{extra}")).to_have_text("", timeout=10_000)
    expect(page.locator(".stale")).to_have_count(0, timeout=10_000)


COUNT_WRITES = """(b) => {  // counts every write of the box's text (the script's only way in)
    const own = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, 'value');
    window.qllWrites = [];
    Object.defineProperty(b, 'value', {get() { return own.get.call(this); },
        set(v) { window.qllWrites.push(v.length); own.set.call(this, v); }});
}"""


def test_a_long_answer_is_rewritten_a_few_times_a_second_not_at_every_message(
        served: tuple[str, Feeds], page: Page) -> None:
    """Rewriting two 8,000-token answers at every message kept a small machine's main thread
    so busy that Stop took no click for 30 s (V74). Past 4,000 characters a box is rewritten
    at most every 250 ms; its newest text still arrives while the run goes on, and all of it
    at the end."""
    url, feeds = served
    page.goto(url)
    token = page.evaluate("window.qllFollow()")
    v = Variant(name="scripted", stream=True, thinking=False, max_tokens=4096)
    rec = Recording(v, build(v, "hi", "m"), "http://scripted/v1", RawTimings(streaming=True))
    feed = feeds.open(token)
    rec.feed(Event("sent", time.perf_counter()))
    feed.recs, feed.where = [rec], [0]
    box = page.locator(f"#{ids.col(ids.ANSWER, 0)} textarea")
    box.evaluate(COUNT_WRITES)
    long = "x" * 5000
    rec.feed(Event("chunk", time.perf_counter(), content=long))
    expect(box).to_have_value(long, timeout=10_000)  # written at once
    pieces = 20
    for i in range(pieces):  # a message each (the producer sends at most every 30 ms)
        rec.feed(Event("chunk", time.perf_counter(), content=f" {i:02d}"))
        time.sleep(0.06)
    whole = long + "".join(f" {i:02d}" for i in range(pieces))
    expect(box).to_have_value(whole, timeout=10_000)  # before the run's end
    assert not feed.done
    writes = page.evaluate("window.qllWrites")
    # 20 messages over ~1.2 s: about 5 rewrites at 250 ms; one per message without the limit
    assert writes[0] == len(long) and len(writes) <= pieces // 2, writes
    rec.feed(Event("chunk", time.perf_counter(), content=" end"))
    rec.feed(Event("done", time.perf_counter()))
    feed.finish()
    expect(box).to_have_value(whole + " end", timeout=10_000)


LABEL = "replay of scripted (CPU only, 2026-12-05)"


class Dial:
    """Scripted time for the replay producer (lab/replay.play's clock and sleep): it stands
    still until the test turns it, so what a page shows at a given moment of the recording
    does not depend on how fast this machine is."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        until = self.now + seconds
        while self.now < until:
            await asyncio.sleep(0.005)


def replay_on(url: str, feeds: Feeds, page: Page, speed: float, dial: Dial,
              loop: asyncio.AbstractEventLoop) -> tuple[Feed, LiveRun]:
    """A replay of one recorded streaming column ("a" at 0.2 s, "b" at 0.6 s, "c" at 1.0 s
    after its send), played at `speed` through the real producer (lab/replay.play) into the
    feed `page` follows -- the way the Replay button plays it -- on its own event loop."""
    page.goto(url)
    token = page.evaluate("window.qllFollow()")
    rec = from_history([recorded("fast", True, 100.0, [(100.2, "a"), (100.6, "b"),
                                                       (101.0, "c")], 101.0)])
    recs = recordings(rec)
    feed = feeds.open(token)
    feed.recs, feed.where, feed.replay = recs, [0], LABEL
    future = asyncio.run_coroutine_threadsafe(
        play(rec, recs, speed=speed, clock=dial.clock, sleep=dial.sleep), loop)
    deadline = time.monotonic() + 30  # started (its "sent" fed): its clock reads the dial's 0
    while recs[0].raw.t_send is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert recs[0].raw.t_send == dial.now
    return feed, LiveRun(future)


@pytest.fixture()
def player() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop of its own (a thread) for the replays: the measuring loop's stand-in."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield loop
    loop.call_soon_threadsafe(loop.stop)
    thread.join(timeout=10)


def test_the_replay_speed_sets_the_pace_and_stop_keeps_what_was_shown(
        served: tuple[str, Feeds], browser, player: asyncio.AbstractEventLoop) -> None:  # type: ignore[no-untyped-def]
    """Two pages replay the same recording, at 1x and at 4x, on one scripted clock: at the
    same moment the 4x page shows more of it. Then Stop (the run's LiveRun.stop, what the Stop
    button calls) ends the 1x replay: the text shown so far stays, the rest never comes."""
    url, feeds = served
    dial = Dial()
    ctx = browser.new_context()
    try:
        slow_page, fast_page = ctx.new_page(), ctx.new_page()
        slow, slow_run = replay_on(url, feeds, slow_page, 1.0, dial, player)
        fast, fast_run = replay_on(url, feeds, fast_page, 4.0, dial, player)
        slow_box = slow_page.locator(f"#{ids.col(ids.ANSWER, 0)} textarea")
        fast_box = fast_page.locator(f"#{ids.col(ids.ANSWER, 0)} textarea")
        dial.now = 0.3  # 1x: "a" is due (0.2 s); 4x: all three (0.05, 0.15, 0.25 s)
        expect(fast_box).to_have_value("abc", timeout=10_000)
        expect(slow_box).to_have_value("a", timeout=10_000)
        assert not slow_run.future.done() and fast_run.future.result(timeout=10)
        fast.finish()
        status = slow_page.locator(f"#{ids.col(ids.LIVE_STATUS, 0)}")
        expect(status).to_contain_text("running")
        # a replay says so wherever its numbers appear: the status line, the headline, the
        # connection line
        expect(status).to_contain_text("▶ replay · ")
        expect(slow_page.locator(f"#{ids.HEADLINE}")).to_contain_text(LABEL)
        assert slow_page.locator(f"#{ids.CONNECTION}").get_attribute("data-replay") == LABEL
        slow_run.stop()  # Stop
        slow.finish()
        dial.now = 5.0  # past the recording's end: nothing more may come
        expect(slow_page.locator(f"#{ids.BARS} svg")).to_be_visible(timeout=10_000)  # ended
        assert slow.recs[0].status == "cancelled"
        assert slow_box.input_value() == "a"  # what was shown is kept, the rest never came
    finally:
        ctx.close()


def test_a_value_typed_just_before_run_is_handed_over_before_the_click_is_sent(
        served: tuple[str, Feeds], page: Page) -> None:
    """Gradio hands an edited control to the app (the `sync` event, numbered by qllPlan) a
    moment after the edit, or at the blur the click itself causes: a click that comes first
    waits for that hand-over, so the run is the one with the value typed; a click with nothing
    edited goes at once."""
    import json

    stage_page(page, served[0])  # the page's first hand-over (its load) included
    page.evaluate("() => document.body.insertAdjacentHTML('beforeend', "
                  "'<input id=\"max-tokens\">')")
    sent: list[dict] = []

    def stage(route) -> None:  # type: ignore[no-untyped-def]
        sent.append(json.loads(route.request.post_data or "{}"))
        route.fulfill(status=200, content_type="application/json", body="{}")

    page.route(f"**/{ids.STAGE_ROUTE}run/**", stage)
    page.fill("#max-tokens", "24")  # edited ...
    page.click(f"#{ids.STAGE_RUN}")  # ... and clicked before Gradio handed it over
    page.evaluate("window.qllPlan()")  # Gradio's hand-over of the edit: number 2
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert sent == [{"seq": 2, "prompt": "the prompt"}]
    page.click(f"#{ids.STAGE_RUN}")  # nothing edited since: sent at once, same plan
    deadline = time.monotonic() + 10
    while len(sent) < 2 and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert sent[1] == {"seq": 2, "prompt": "the prompt"}


def test_a_click_right_after_a_preset_pick_waits_for_the_picked_values(
        served: tuple[str, Feeds], page: Page) -> None:
    """A preset pick's controls reach the app in one hand-over chained after the pick's event
    (no control's own event fires for them); the pick marks that hand-over due at once
    (column_view.PICK_JS calls qllEdited), so a click that comes first runs the picked preset,
    not the column as it was."""
    import json

    stage_page(page, served[0])
    sent: list[dict] = []

    def stage(route) -> None:  # type: ignore[no-untyped-def]
        sent.append(json.loads(route.request.post_data or "{}"))
        route.fulfill(status=200, content_type="application/json", body="{}")

    page.route(f"**/{ids.STAGE_ROUTE}run/**", stage)
    page.evaluate("window.qllEdited()")  # the pick's event started
    page.click(f"#{ids.STAGE_RUN}")  # ... and Run clicked before its hand-over
    page.wait_for_timeout(100)
    assert sent == []  # held back
    page.evaluate("window.qllPlan()")  # the chained hand-over: number 2
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert sent == [{"seq": 2, "prompt": "the prompt"}]


def stage_page(page: Page, url: str) -> None:
    """The test page with the stage's prompt, Run and note, the page's first hand-over done."""
    page.goto(url)
    page.evaluate(f"""() => {{
        document.body.insertAdjacentHTML('beforeend',
            '<div id="{ids.PROMPT}"><textarea>the prompt</textarea></div>' +
            '<button id="{ids.STAGE_RUN}">Run</button><div id="{ids.STAGE_NOTE}"></div>');
        window.qllPlan();
    }}""")


def test_a_run_request_leaves_after_the_browser_drew_the_click(
        served: tuple[str, Feeds], page: Page) -> None:
    """The click's own drawing (emptied boxes, faded markup, Stop) is done before the request
    goes: an animation frame runs between the click and the POST, so the page's work does not
    share the CPU with the server and the reader while the request is in flight. Ordering only,
    no duration."""
    stage_page(page, served[0])
    page.evaluate("""() => {
        window.qllLog = [];
        const f = window.fetch;
        window.fetch = (...a) => { window.qllLog.push('request'); return f(...a); };
        window.addEventListener('click', () => {
            window.qllLog.push('click');
            requestAnimationFrame(() => window.qllLog.push('frame'));
        }, true);
    }""")
    page.route(f"**/{ids.STAGE_ROUTE}run/**", lambda route: route.fulfill(
        status=200, content_type="application/json", body="{}"))
    page.click(f"#{ids.STAGE_RUN}")
    page.wait_for_function("() => window.qllLog.includes('request')", timeout=10_000)
    log = page.evaluate("() => window.qllLog")
    assert log.index("click") < log.index("frame") < log.index("request"), log
    # the benchmarks' side-by-side switch: the request at the click, before any frame
    page.evaluate("() => { window.qllLog = []; window.qllSendAtClick = true; }")
    page.click(f"#{ids.STAGE_RUN}")
    page.wait_for_function("() => window.qllLog.includes('request')", timeout=10_000)
    log = page.evaluate("() => window.qllLog")
    assert log[:2] == ["click", "request"], log


def test_stop_before_the_run_request_left_cancels_it(
        served: tuple[str, Feeds], page: Page) -> None:
    """A Stop that comes while a Run waits for its frame (or for a control's hand-over) cancels
    that Run: its request never goes, so it cannot start after the Stop and run on."""
    stage_page(page, served[0])
    sent: list[str] = []

    def stage(route) -> None:  # type: ignore[no-untyped-def]
        sent.append(route.request.url.split(ids.STAGE_ROUTE)[1].split("/")[0])
        route.fulfill(status=200, content_type="application/json", body="{}")

    page.route(f"**/{ids.STAGE_ROUTE}*/**", stage)
    page.evaluate(f"""() => {{
        document.getElementById('{ids.STAGE_RUN}').click();
        document.getElementById('{ids.STAGE_STOP}').click();
    }}""")
    expect(page.locator(f"#{ids.STAGE_NOTE}")).to_have_text(
        "stopped before the request was sent")
    expect(page.locator(f"#{ids.STAGE_STOP}")).to_be_disabled()
    # past the frames and the longest wait the cancelled Run could have had
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => "
                  "requestAnimationFrame(() => setTimeout(r, 150))))")
    assert sent == []
    page.click(f"#{ids.STAGE_RUN}")  # the next Run goes as usual
    deadline = time.monotonic() + 10
    while not sent and time.monotonic() < deadline:
        page.wait_for_timeout(20)
    assert sent == ["run"]

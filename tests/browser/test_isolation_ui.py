"""Two visitors of one shared page (two browser contexts): each lists only their own runs and
recordings, and neither can silently replace the other's saved preset."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from tests.apphelp import PENDING, mounted
from tests.apphelp import open_page as visitor
from tests.browser.test_playground_ui import LONG, pick
from tests.procs import wait_for

pytestmark = [pytest.mark.browser, pytest.mark.server]


def replay_choices(page: Page) -> list[str]:
    panel = page.locator("#replay-panel")
    if not page.locator("#replay-pick").is_visible():
        panel.get_by_text("Replay a recording").first.click()
    box = page.locator("#replay-pick input")
    mounted(page, box)  # a click before the mount was lost
    # the list opens a moment after the click: wait for it (the shipped recordings are always
    # in it) before reading, or an empty read would pass for "no runs". A click that lands
    # while the list is being refreshed (it is chained after each run) opens nothing (CI of
    # 3c876e9: the box was never expanded in 30 s): wait out the refresh, then click again
    first = page.get_by_role("option").first
    for _ in range(10):
        expect(page.locator(PENDING)).to_have_count(0, timeout=60_000)
        box.click()
        try:
            first.wait_for(state="visible", timeout=3_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
            box.blur()
    else:
        raise AssertionError("the recording list did not open on any of 10 clicks")
    options = page.get_by_role("option").all_inner_texts()
    page.keyboard.press("Escape")
    return options


def save_preset(page: Page, name: str, outcome: str) -> str:
    """Save column 1 as `name`; wait for the status to say `outcome`; return the status."""
    acc = page.get_by_text("Save columns as a preset")
    if not page.get_by_label("preset name (letters, digits, - _ .)").is_visible():
        acc.click()
    page.get_by_label("preset name (letters, digits, - _ .)").fill(name)
    page.get_by_role("button", name="Save", exact=True).click()
    status = page.locator("#save-status")
    expect(status).to_contain_text(outcome, timeout=LONG)
    return status.inner_text().strip()


@pytest.mark.reliability(case="two visitors of one shared page, in the browser", where="each "
                         "visitor's replay list shows the shipped recordings and their own "
                         "runs only; a preset name another visitor saved is refused (named), "
                         "one's own can be saved again; an empty name is refused", order=58)
def test_visitors_see_only_their_own_runs_and_keep_their_presets(
        browser, app_url: str, observed: Callable[[str], None]) -> None:  # type: ignore[no-untyped-def]
    a, b = visitor(browser, app_url), visitor(browser, app_url)

    def runs_of(page: Page) -> list[str]:  # the run files a visitor's list offers
        return [c for c in replay_choices(page) if c.endswith(".jsonl")]

    pick(a, "preset 1", "fixed-64-stream")
    pick(a, "preset 2", "fixed-64-nonstream")
    a.get_by_role("button", name="Run", exact=True).click()
    expect(a.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    expect(a.locator("#metrics-0")).to_contain_text("E2E", timeout=LONG)
    # the list refresh is chained after the run: wait for A's run to be listed, and keep that
    # reading (V20: a second read of the same list, at once, came back without it)
    seen: list[list[str]] = []
    assert wait_for(lambda: bool(seen.append(runs_of(a)) or seen[-1]), 60, step=0.5)
    mine, theirs = seen[-1], runs_of(b)
    fresh = visitor(browser, app_url)
    others = runs_of(fresh)
    name = f"iso-{id(a) % 100000}"
    first = save_preset(a, name, "saved as")
    stolen = save_preset(b, name, "already exists")  # refused, named: not silently replaced
    again = save_preset(a, name, "replaces your earlier save")  # one's own: allowed
    empty = save_preset(b, "", "preset name")
    observed(f"A's list: {len(mine)} run(s) of A's; B's list and a new visitor's: "
             f"{len(theirs)} and {len(others)} runs; B saving A's name: "
             f"{stolen} / empty name: {empty}")
    assert len(mine) == 1 and "playground" in mine[0]
    assert theirs == [] and others == []
    assert first.startswith("✅") and again.startswith("✅")
    assert stolen.startswith("❌") and empty.startswith("❌")


@pytest.mark.reliability(case="one visitor of a shared page saves preset after preset, in the "
                         "browser", where="past the hourly count (12) the save status refuses, "
                         "naming the field and when to try again; saving one's own again is "
                         "free", order=58)
def test_a_visitor_of_a_shared_page_saves_a_bounded_number_of_presets(
        browser, tmp_path: Path, observed: Callable[[str], None]) -> None:  # type: ignore[no-untyped-def]
    from playground.ui.quotas import PRESETS_PER_WINDOW
    from tests.apphelp import app

    login = ("demo", "presets-pass-3a9")
    env = {"PLAYGROUND_AUTH": ":".join(login), "PLAYGROUND_USER_PRESETS_DIR": str(tmp_path)}
    with app("--replay", env_extra=env, log=tmp_path / "app.log") as (url, _):
        page = visitor(browser, url, login=login)
        for i in range(PRESETS_PER_WINDOW):
            save_preset(page, f"cap-{i}", f"saved as cap-{i} ")
        refused = save_preset(page, "cap-extra", "at most")
        again = save_preset(page, "cap-0", "replaces your earlier save")
        page.context.close()
    observed(f"{PRESETS_PER_WINDOW} saved, then: {refused}; saving cap-0 again: {again[:40]}")
    assert refused.startswith("❌ preset name: at most 12 new presets")
    assert not (tmp_path / "variants" / "cap-extra.yaml").exists()
    assert again.startswith("✅")

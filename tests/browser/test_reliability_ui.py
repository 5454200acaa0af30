"""Reliability in the browser: a fault and a too-long request in their own column, and the API
key typed into the UI (real Chromium, the real server, the fault proxy in front of it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.test_playground_ui import LONG, pick
from tests.faultproxy import FaultProxy

pytestmark = [pytest.mark.browser, pytest.mark.server]
KEY = "sk-ui-SECRET-77e0b2"


@pytest.fixture(scope="module")
def proxy(vllm_server: str) -> Iterator[FaultProxy]:
    p = FaultProxy(vllm_server).start()
    yield p
    p.stop()


def connect(page: Page, url: str, key: str = "") -> None:
    page.get_by_text("Server connection").click()
    page.get_by_label("base URL", exact=True).fill(url)
    if key:
        page.get_by_label("API key (optional; never shown again)", exact=True).fill(key)
    page.get_by_role("button", name="Connect", exact=True).click()
    expect(page.locator("#server-status")).to_contain_text("vLLM 0.", timeout=LONG)


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
    box.fill("5000")
    box.press("Tab")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#error-0")).to_contain_text("not sent", timeout=LONG)
    expect(page.locator("#error-0")).to_contain_text("max_tokens")
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    observed(page.locator("#error-0").inner_text())


@pytest.mark.reliability(case="API key typed into the UI", where="nowhere after entry: not in "
                         "the page, code snippets, run history or the app's log", order=51)
def test_api_key_typed_in_the_ui_is_never_shown(page: Page, vllm_server: str, app_runs: Path,
                                                app_log: Path,
                                                observed: Callable[[str], None]) -> None:
    connect(page, vllm_server, KEY)
    pick(page, "preset 1", "fixed-64-stream")
    pick(page, "preset 2", "fixed-64-nonstream")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.locator("#metrics-0")).to_contain_text("E2E", timeout=LONG)
    expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)
    page.get_by_text("View code").first.click()
    expect(page.locator("#code-py-0")).to_contain_text("chat.completions.create")
    shown = page.evaluate("""() => document.body.innerText + document.body.innerHTML +
        [...document.querySelectorAll('textarea, input:not([type=password])')]
            .map(e => e.value).join(' ')""")
    files = [p for p in app_runs.rglob("*") if p.is_file()]
    leaks = [str(p) for p in (*files, app_log) if KEY in p.read_text("utf-8", "replace")]
    observed(f"page text, {len(files)} run files and the app log grepped: key found in "
             f"{len(leaks) + (KEY in shown)} places")
    assert files and KEY not in shown and leaks == []

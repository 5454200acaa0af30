"""Where a shared page may send a visitor's requests (issue 4/7, item 7): with
--allow-visitor-urls a visitor could make the app fetch the cloud metadata service or scan the
operator's network, and read what those answered."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.apphelp import app, open_page
from tests.browser.test_playground_ui import LONG, pick
from tests.browser.test_reliability_ui import connect, type_url
from tests.faultproxy import FaultProxy

pytestmark = [pytest.mark.browser, pytest.mark.server]

LOGIN = ("demo", "outbound-pass-71c")


@pytest.mark.reliability(case="a visitor of a shared page (--allow-visitor-urls) types the "
                         "metadata service, a private address, or a server whose errors hold "
                         "secrets, in the browser", where="the connection line refuses "
                         "link-local and private addresses (named; nothing sent); with "
                         "--allow-private-urls the column names the HTTP status only, never "
                         "the server's words", order=55)
def test_a_shared_page_sends_nowhere_private_and_shows_no_foreign_error_text(
        browser, vllm_server: str, tmp_path: Path,  # type: ignore[no-untyped-def]
        observed: Callable[[str], None]) -> None:
    p = FaultProxy(vllm_server).start()
    env = {"PLAYGROUND_BASE_URL": vllm_server, "PLAYGROUND_WARMUP": "off",
           "PLAYGROUND_AUTH": ":".join(LOGIN), "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"),
           "PLAYGROUND_USER_PRESETS_DIR": str(tmp_path / "up")}
    status = "#server-status"
    try:
        with app("--allow-visitor-urls", env_extra=env, log=tmp_path / "a.log") as (url, _):
            page = open_page(browser, url, login=LOGIN)
            lines = []
            for typed, why in (("http://169.254.169.254/v1", "169.254.169.254 is link-local"),
                               ("http://[::ffff:169.254.169.254]/v1",
                                "::ffff:169.254.169.254 is at ::ffff:a9fe:a9fe, link-local"),
                               (p.url("ok-private"), "127.0.0.1 is loopback")):
                connect_refused(page, typed)
                expect(page.locator(status)).to_contain_text(why, timeout=LONG)
                lines.append(page.locator(status).inner_text().strip())
            page.context.close()
        sent_private = len(p.seen)
        with app("--allow-visitor-urls", "--allow-private-urls", env_extra=env,
                 log=tmp_path / "b.log") as (url, _):
            page = open_page(browser, url, login=LOGIN)
            connect(page, p.url("500"))
            pick(page, "preset 1", "fixed-64-stream")
            pick(page, "preset 2", "fixed-64-nonstream")
            page.get_by_role("button", name="Run", exact=True).click()
            expect(page.locator("#error-0")).to_contain_text("HTTP 500", timeout=LONG)
            shown = page.locator("#error-0").inner_text()
            expect(page.locator("#metrics-1")).to_contain_text("E2E", timeout=LONG)  # the
            page.context.close()  # other column (non-streaming, passed through) ran
    finally:
        p.stop()
    observed(f"{lines[0][:90]}... / requests the proxy got while refused: {sent_private}; "
             f"a foreign server's 500: {shown.strip()[:120]}")
    assert sent_private == 0 and all(line.startswith("❌ base URL:") for line in lines)
    assert "EngineCore" not in shown and "not shown" in shown


def connect_refused(page, url: str) -> None:  # type: ignore[no-untyped-def]
    """Press Connect with `url` (refused: the status never names it as connected)."""
    type_url(page, url)
    page.get_by_role("button", name="Connect", exact=True).click()

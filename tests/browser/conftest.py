"""The app served on localhost (python app.py, reusing the real vLLM test server) + Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.apphelp import open_page
from tests.conftest import session_app

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


@pytest.fixture(scope="session")
def app_runs() -> Path:
    """The app's run folder (PLAYGROUND_RUNS_DIR): tests grep what it wrote."""
    return session_app().runs


@pytest.fixture(scope="session")
def app_log() -> Path:
    return session_app().log


@pytest.fixture(scope="session")
def app_url(vllm_server: str) -> str:
    """`python app.py` on the main test server (started in the background once that server
    answered: tests/boot; stopped at the end of the session)."""
    return session_app().wait()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/test.sh installs Debian's chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture()
def page(browser, app_url: str):  # type: ignore[no-untyped-def]
    """A new visitor's page: its own browser context and its own visitor address."""
    pg = open_page(browser, app_url)
    yield pg
    pg.context.close()

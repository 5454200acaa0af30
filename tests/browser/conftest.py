"""The app served on localhost (python app.py, reusing the real vLLM test server) + Chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from playground.server.managed import free_port
from playground.settings import REPO_ROOT
from tests.apphelp import open_page, wait_listening

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]


@pytest.fixture(scope="session")
def app_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The app's run folder (PLAYGROUND_RUNS_DIR): tests grep what it wrote."""
    return tmp_path_factory.mktemp("runs")


@pytest.fixture(scope="session")
def app_log() -> Path:
    return REPO_ROOT / ".cache" / "logs" / "test-app.log"


@pytest.fixture(scope="session")
def app_url(vllm_server: str, tmp_path_factory: pytest.TempPathFactory,
            app_runs: Path) -> Iterator[str]:
    port = free_port()
    runs = app_runs
    env = {**os.environ, "PLAYGROUND_BASE_URL": vllm_server, "GRADIO_SERVER_PORT": str(port),
           "PLAYGROUND_RUNS_DIR": str(runs), "GRADIO_ANALYTICS_ENABLED": "False",
           "PLAYGROUND_READ_TIMEOUT_S": "20",  # the stall test waits this long
           # each test's pages are a visitor of their own (tests/apphelp.open_page)
           "PLAYGROUND_TRUSTED_PROXIES": "127.0.0.1",
           "PLAYGROUND_USER_PRESETS_DIR": str(tmp_path_factory.mktemp("user_presets"))}
    log = (REPO_ROOT / ".cache" / "logs")
    log.mkdir(parents=True, exist_ok=True)
    with (log / "test-app.log").open("wb") as out:
        proc = subprocess.Popen([sys.executable, str(REPO_ROOT / "app.py")], env=env,
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_listening(url, proc, log / "test-app.log")
        yield url
    finally:
        proc.terminate()  # the app stops the servers it started, then exits
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            raise


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

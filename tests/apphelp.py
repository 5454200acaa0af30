"""Shared by tests that start the app as a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playground.server import http
from playground.server.managed import free_port


def wait_listening(url: str, proc: subprocess.Popen[bytes], log: Path,
                   ok: tuple[int, ...] = (200,), tries: int = 240) -> None:
    """Bounded wait until `url` answers with one of `ok`; fails with the app's log tail."""
    for _ in range(tries):
        try:
            if http.get(url, timeout_s=1).status in ok:
                return
        except OSError:
            pass
        if proc.poll() is not None:
            raise RuntimeError(f"app exited: {log.read_text()[-2000:]}")
        time.sleep(0.5)
    raise RuntimeError(f"app did not answer at {url}: {log.read_text()[-2000:]}")


@contextmanager
def app(*args: str, env_extra: dict[str, str] | None = None,
        log: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`playground ui ARGS` on a free port, with no PLAYGROUND_* setting but `env_extra`'s;
    yields (url, process) once it answers (200, or 401 behind auth), terminates it after."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYGROUND_")}
    env.update({"GRADIO_ANALYTICS_ENABLED": "False", **(env_extra or {})})
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "playground.cli", "ui", "--port",
                                 str(port), *args], env=env, stdout=out,
                                stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_listening(url, proc, log, ok=(200, 401))
        yield url, proc
    finally:
        proc.terminate()
        proc.wait(timeout=60)


def open_page(browser: Any, url: str) -> Any:
    """A new visitor (its own browser context) on the app at `url`, once the page is drawn."""
    page = browser.new_context(viewport={"width": 1500, "height": 1600}).new_page()
    page.goto(url)
    page.wait_for_selector("text=Variant 1", timeout=60_000)
    return page

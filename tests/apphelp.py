"""Shared by tests that start the app as a subprocess."""

from __future__ import annotations

import itertools
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
    env.update({"GRADIO_ANALYTICS_ENABLED": "False", "PLAYGROUND_TRUSTED_PROXIES": "127.0.0.1",
                **(env_extra or {})})
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


_VISITORS = itertools.count(1)
# Gradio's status tracker over a component whose event is still running (it gets `hide` when
# the event is done)
PENDING = "div.wrap.full:not(.hide):visible"
ACTION_MS = 120_000  # a page action's limit (open_page says why)


def new_visitor() -> str:
    """A visitor address of its own (TEST-NET-2, RFC 5737: never a real host; it only ever
    travels in a header to an app on this machine that trusts 127.0.0.1 as its proxy)."""
    n = next(_VISITORS)
    return f"198.51.{100 + n // 250}.{n % 250 + 1}"


def open_page(browser: Any, url: str, visitor: str | None = None,
              login: tuple[str, str] | None = None) -> Any:
    """A new visitor (its own browser context and, for an app that trusts 127.0.0.1 as its
    proxy, its own address: its own fair share) on the app at `url`, once the page is
    drawn. Pages given the same `visitor` are one visitor's sessions. `login`: (user,
    password) for Gradio's login form of an app behind --auth."""
    ctx = browser.new_context(viewport={"width": 1500, "height": 1600},
                              extra_http_headers={"X-Forwarded-For": visitor or new_visitor()})
    # An action (a click, reading a box) gets as long as the suite's other waits. Playwright's
    # own 30 s was the shortest limit of every test, and on the 2-core box vLLM decoding long
    # answers stalls every process for seconds at a time: a plain Python loop sleeping 50 ms,
    # with no browser running, saw 6.8 s and 8.7 s stalls while the test server decoded two
    # 8,000-token answers (2026-12-07). A page acting during such a run (V89: reading a
    # column's metrics; V90: clicking Run) ran out of the 30 s and failed the test.
    ctx.set_default_timeout(ACTION_MS)
    page = ctx.new_page()
    page.goto(url)
    if login:
        page.get_by_label("username").fill(login[0])
        page.get_by_label("password").fill(login[1])
        page.get_by_role("button", name="Login").click()
    page.wait_for_selector("text=Variant 1", timeout=60_000)
    # the page's own load events (the connection check) have landed: a slow one cannot
    # overwrite what the test does next
    page.locator(PENDING).first.wait_for(state="detached", timeout=120_000)
    # ... and answered: the PENDING wait alone returned before the check was sent at all
    # (V15: the check and a Connect were both in flight)
    from playwright.sync_api import expect

    if page.locator("#server-status").count():
        expect(page.locator("#server-status")).not_to_contain_text("connecting…",
                                                                   timeout=120_000)
    return page


def mounted(page: Any, locator: Any) -> None:
    """Wait until `locator` is visible and the page has drawn two more frames: Gradio mounts an
    accordion's contents when it first opens, and input typed (or a click) before its handlers
    were attached was lost -- the app then got the box's old value (V15, V18: a Connect that
    connected to the default URL)."""
    locator.wait_for(state="visible", timeout=60_000)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => "
                  "requestAnimationFrame(() => r(true))))")


def run_rows(runs: Path, kind: str = "playground") -> list[dict[str, Any]]:
    """Every finished request in the app's run files of one kind (runs/KIND/*.jsonl), in
    order: a run's result is final when its row is there."""
    import json

    rows = []
    for f in sorted((runs / kind).glob("*.jsonl")):
        for line in f.read_text("utf-8").splitlines():
            try:
                row = json.loads(line)
            except ValueError:  # a line still being written
                continue
            if row.get("kind") == "request":
                rows.append(row)
    return rows

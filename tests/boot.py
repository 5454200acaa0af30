"""The suite's real servers (and the app the browser tests share), started early: at
collection, while the unit tests run.

A vLLM server takes 1-3 minutes to start on this box. Each one the selected tests need is
started as soon as collection is over, so its start-up overlaps the unit tests (which run
first), and a fixture only waits for /health when a test first needs it.

A managed server is told to exit when the *thread* that started it dies (PR_SET_PDEATHSIG, see
server/managed), so each one is started from a thread of its own that lives until the session
ends and then stops it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from playground.server.managed import ManagedServer, ServerConfig
from playground.settings import REPO_ROOT

READY_TIMEOUT_S = 900.0


class Boot:
    """One managed server: `begin()` starts it in the background, `server()` waits until it
    answers, `end()` stops it."""

    def __init__(self, name: str, config: Callable[[], ServerConfig], log: Path) -> None:
        self.name, self._config, self._log = name, config, log
        self._managed: ManagedServer | None = None
        self._error: BaseException | None = None
        self._started, self._stop, self._stopped = (threading.Event(), threading.Event(),
                                                     threading.Event())
        self._thread = threading.Thread(target=self._run, name=f"boot-{name}", daemon=True)

    def begin(self) -> Boot:
        if not self._thread.is_alive() and not self._started.is_set():
            self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._managed = ManagedServer(self._config(), self._log)
            self._managed.start()
        except BaseException as e:  # handed to the fixture that waits for this server
            self._error = e
        finally:
            self._started.set()
        self._stop.wait()
        if self._managed is not None:
            self._managed.stop()
        self._stopped.set()

    def server(self) -> ManagedServer:
        """The running server, once it answers /health."""
        self.begin()
        self._started.wait()
        if self._error is not None:
            raise self._error
        assert self._managed is not None
        self._managed.wait_ready(timeout_s=READY_TIMEOUT_S)
        return self._managed

    def url_if_up(self) -> str | None:
        """The base URL of a server that was started (None for one never started, one still
        being launched or one that failed): never waits."""
        if not self._started.is_set() or self._error is not None or self._managed is None:
            return None
        return self._managed.config.base_url

    def end(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._stopped.wait(120)


class Started(Protocol):
    def begin(self) -> object: ...
    def end(self) -> None: ...


BOOTS: dict[str, Started] = {}


def boot(name: str, config: Callable[[], ServerConfig], log: Path) -> Boot:
    """The one Boot of this name (made on first use)."""
    if name not in BOOTS:
        BOOTS[name] = Boot(name, config, log)
    found = BOOTS[name]
    assert isinstance(found, Boot)
    return found


def app_boot(server_url: Callable[[], str], log: Path, root: Path) -> AppBoot:
    """The one session app (made on first use)."""
    if "app" not in BOOTS:
        BOOTS["app"] = AppBoot(server_url, log, root)
    found = BOOTS["app"]
    assert isinstance(found, AppBoot)
    return found


def end_all() -> None:
    """Everything started, the app first (it uses the servers)."""
    for b in sorted(BOOTS.values(), key=lambda b: not isinstance(b, AppBoot)):
        b.end()


class AppBoot:
    """The session's app (`python app.py`) on the main test server, started in the background
    as soon as that server answers, so the browser tests find it up. Its run and user-preset
    folders are its own (tests grep what it wrote)."""

    def __init__(self, server_url: Callable[[], str], log: Path, root: Path) -> None:
        from playground.server.managed import free_port

        self._server_url, self.log, self.root = server_url, log, root
        self.runs, self.user_presets = root / "runs", root / "user_presets"
        self.url = f"http://127.0.0.1:{free_port()}/"
        self._proc: subprocess.Popen[bytes] | None = None
        self._error: BaseException | None = None
        self._started = threading.Event()
        self._lock, self._ended = threading.Lock(), False
        self._thread = threading.Thread(target=self._run, name="boot-app", daemon=True)

    def begin(self) -> AppBoot:
        if not self._thread.is_alive() and not self._started.is_set():
            self._thread.start()
        return self

    def _run(self) -> None:
        try:
            base_url = self._server_url()
            port = self.url.rsplit(":", 1)[1].strip("/")
            env = {**os.environ, "PLAYGROUND_BASE_URL": base_url, "GRADIO_SERVER_PORT": port,
                   "PLAYGROUND_RUNS_DIR": str(self.runs), "GRADIO_ANALYTICS_ENABLED": "False",
                   "PLAYGROUND_READ_TIMEOUT_S": "20",  # the stall test waits this long
                   # each test's pages are a visitor of their own (tests/apphelp.open_page)
                   "PLAYGROUND_TRUSTED_PROXIES": "127.0.0.1",
                   "PLAYGROUND_USER_PRESETS_DIR": str(self.user_presets)}
            self.log.parent.mkdir(parents=True, exist_ok=True)
            with self._lock, self.log.open("wb") as out:
                if not self._ended:
                    self._proc = subprocess.Popen([sys.executable, "app.py"], env=env,
                                                  stdout=out, stderr=subprocess.STDOUT,
                                                  cwd=REPO_ROOT)
        except BaseException as e:  # handed to the fixture that waits for the app
            self._error = e
        finally:
            self._started.set()

    def wait(self) -> str:
        """The app's URL, once it answers."""
        from tests.apphelp import wait_listening

        self.begin()
        self._started.wait()
        if self._error is not None:
            raise self._error
        assert self._proc is not None
        wait_listening(self.url, self._proc, self.log, tries=1200)
        return self.url

    def end(self) -> None:
        with self._lock:  # an app not started yet never will be
            self._ended = True
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()  # the app stops what it started, then exits
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)

"""The suite's real servers, started early: at collection, while the unit tests run.

A vLLM server takes 1-3 minutes to start on this box. Each one the selected tests need is
started as soon as collection is over, so its start-up overlaps the unit tests (which run
first), and a fixture only waits for /health when a test first needs it.

A managed server is told to exit when the *thread* that started it dies (PR_SET_PDEATHSIG, see
server/managed), so each one is started from a thread of its own that lives until the session
ends and then stops it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from playground.server.managed import ManagedServer, ServerConfig

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

    def end(self) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._stopped.wait(120)


BOOTS: dict[str, Boot] = {}


def boot(name: str, config: Callable[[], ServerConfig], log: Path) -> Boot:
    """The one Boot of this name (made on first use)."""
    if name not in BOOTS:
        BOOTS[name] = Boot(name, config, log)
    return BOOTS[name]


def end_all() -> None:
    for b in BOOTS.values():
        b.end()

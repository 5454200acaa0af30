"""One Playground run's file (runs/playground/): its requests as they become final, then the
server's series over the run (server/shared_series: one sampler per server, shared by every
visitor's runs)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from playground.core.record import RequestRecord
from playground.core.runner import Recording
from playground.lab.store import RunFile, RunStore
from playground.server.shared_series import Lease


@dataclass(eq=False)
class RunLog:
    """One run's file (runs/playground/), appended as each recording becomes final, so what
    finished survives a killed app; the file is created with its first line."""

    store_: RunStore
    recs: list[Recording]
    owner: str = ""
    stop: Callable[[], None] = lambda: None  # the run's Stop (set once it is in flight)
    lease: Lease | None = None  # the server's sampler, held while the run is in flight
    _file: RunFile | None = None
    _stored: set[int] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def store(self, rec: Recording) -> None:
        with self._lock:  # the UI's loop and the app's shutdown may both flush
            if id(rec) in self._stored or not rec.finished:
                return
            self._stored.add(id(rec))
            if self._file is None:
                self._file = self.store_.new_run("playground", self.owner)
            self._file.append(RequestRecord.of(rec))

    def store_finished(self) -> None:
        for rec in list(self.recs):
            self.store(rec)


    def store_series(self) -> None:
        """The server's series over the run, after its requests (once; none without a file:
        a run that stored no request)."""
        lease, self.lease = self.lease, None
        if lease is None:
            return
        series = lease.release()
        with self._lock:
            if self._file is not None:
                self._file.append(*series.lines())

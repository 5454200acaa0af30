"""One /metrics sampler per server for the Playground's runs, whoever runs them.

Many visitors' runs may be in flight on one server at once; each gets the server's series over
its own run, but the server is scraped once per tick, not once per visitor. `SharedSamplers`
keeps one `server/series.Sampler` per base URL while any run on it is in flight (and LINGER_S
after the last, so back-to-back runs do not each open with a scrape at the click); a run holds
a `Lease` and, when it ends, gets a `Series` of the samples taken during it (and the scrapes
that failed meanwhile).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from playground.server.series import Sampler, Series

LINGER_S = 30.0
REAP_SLACK_S = 0.05  # a timer that fires a hair early still reaps


@dataclass
class _Shared:
    sampler: Sampler
    holders: int = 0
    idle_since: float | None = None


@dataclass
class Lease:
    """One run's hold on its server's sampler: from `t0` (the sampler's clock) to `release`."""

    owner: SharedSamplers
    base_url: str
    t0: float
    gaps0: int
    released: bool = False

    def release(self) -> Series:
        """The samples (and GPU samples) taken since the lease began, as one run's series."""
        return self.owner.release(self)


@dataclass
class SharedSamplers:
    interval_for: Callable[[str], float]  # the sampling interval for a base URL
    make: Callable[[str, float], Sampler] = Sampler
    clock: Callable[[], float] = time.perf_counter
    linger_s: float = LINGER_S
    _by_url: dict[str, _Shared] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def hold(self, base_url: str) -> Lease:
        with self._lock:
            self._reap()
            shared = self._by_url.get(base_url)
            if shared is None:
                sampler = self.make(base_url, self.interval_for(base_url)).start()
                shared = self._by_url[base_url] = _Shared(sampler)
            shared.holders += 1
            shared.idle_since = None
            return Lease(self, base_url, self.clock(), shared.sampler.series.gaps)

    def release(self, lease: Lease) -> Series:
        with self._lock:
            shared = self._by_url.get(lease.base_url)
            if shared is None or lease.released:
                return Series(interval_s=0)
            lease.released = True
            shared.holders -= 1
            if shared.holders == 0:
                shared.idle_since = self.clock()
                timer = threading.Timer(self.linger_s, self._reap_now)
                timer.daemon = True
                timer.start()
            series = shared.sampler.series
            t1 = self.clock()
            samples = list(series.samples)
            # the last scrape before the run began: a gauge holds its value until the next
            # one, so it is the server's state at the start (a run shorter than the interval
            # has no scrape of its own)
            before = [s for s in samples if s.t < lease.t0][-1:]
            window = Series(
                samples=before + [s for s in samples if lease.t0 <= s.t <= t1],
                gpu=[g for g in list(series.gpu) if lease.t0 <= g.t <= t1],
                gaps=series.gaps - lease.gaps0, gpu_note=series.gpu_note,
                interval_s=series.interval_s, clock_origin=series.clock_origin)
            self._reap()
            return window

    def _reap_now(self) -> None:
        with self._lock:
            self._reap()

    def _reap(self) -> None:
        """Stop the samplers no run has held for `linger_s` (called under the lock). The stop
        (joining a thread that may be mid-scrape) runs in a thread of its own: a run holding
        the lock meanwhile never waits for it."""
        now = self.clock()
        for url, shared in list(self._by_url.items()):
            if shared.holders == 0 and shared.idle_since is not None and \
                    now - shared.idle_since >= self.linger_s - REAP_SLACK_S:
                threading.Thread(target=shared.sampler.stop, name="sampler-stop",
                                 daemon=True).start()
                del self._by_url[url]

    def leased(self, base_url: str) -> Leased:
        """A sampler's face over the shared one (what lab/bench asks its port for)."""
        return Leased(self, base_url)

    def stop(self) -> None:
        """Stop every sampler (the app is shutting down)."""
        with self._lock:
            stopping = [shared.sampler for shared in self._by_url.values()]
            self._by_url.clear()
        for sampler in stopping:
            sampler.stop()


@dataclass
class Leased:
    """`start` holds the server's shared sampler, `stop` releases it with the run's series: a
    benchmark or claim run from the app scrapes no more than the Playground's runs do."""

    samplers: SharedSamplers
    base_url: str
    lease: Lease | None = None

    def start(self) -> Leased:
        self.lease = self.samplers.hold(self.base_url)
        return self

    def stop(self) -> Series:
        lease, self.lease = self.lease, None
        return lease.release() if lease is not None else Series(interval_s=0)

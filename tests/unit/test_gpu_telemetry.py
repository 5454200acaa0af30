"""GPU telemetry beside a run (server/gpu through the server sampler).

No NVIDIA GPU is visible on the machines this suite runs on, so the GPU side is a scripted NVML
module (the calls `nvidia-ml-py` exposes as `pynvml`, with its units: bytes, milliwatts); the
no-GPU side is this machine itself, and the integration test of `playground bench` checks what a
real run on it says.
"""

from __future__ import annotations

import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from playground.core.record import RequestRecord
from playground.lab.store import RunMeta, RunStore, read_run
from playground.lab.summary import server_summary
from playground.server import gpu
from playground.server.gpu import NO_GPU, NO_NVML, Gpus
from playground.server.series import Sampler, describe


class NVMLError(Exception):
    pass


RESERVED = 480 * 1024 * 1024  # what the driver keeps for itself (an idle H100 read so in v1)


def scripted_nvml(n: int = 2, init_fails: bool = False, v2: bool = True) -> types.ModuleType:
    """pynvml's surface as the telemetry uses it. Memory: NVML's v1 query counts the driver's
    reservation as used, the v2 query (`version=nvmlMemory_v2`) does not -- nvidia-smi's
    figure; `v2=False` is a driver without the v2 query."""
    m = types.ModuleType("scripted_nvml")
    m.NVMLError = NVMLError  # type: ignore[attr-defined]
    m.NVML_CLOCK_SM = 1  # type: ignore[attr-defined]
    m.nvmlMemory_v2 = 0x02000028  # type: ignore[attr-defined]
    m.calls = []  # type: ignore[attr-defined]

    def init() -> None:
        m.calls.append("init")  # type: ignore[attr-defined]
        if init_fails:
            raise NVMLError("NVML Shared Library Not Found")

    def power(h: int) -> int:
        if h == 1:
            raise NVMLError("Not Supported")  # a board that does not report power
        return 312_000  # milliwatts

    def clock(h: int, which: int) -> int:
        assert which == 1
        return 1980

    m.nvmlInit = init  # type: ignore[attr-defined]
    m.nvmlShutdown = lambda: m.calls.append("shutdown")  # type: ignore[attr-defined]
    m.nvmlDeviceGetCount = lambda: n  # type: ignore[attr-defined]
    m.nvmlDeviceGetHandleByIndex = lambda i: i  # type: ignore[attr-defined]
    m.nvmlDeviceGetUtilizationRates = (  # type: ignore[attr-defined]
        lambda h: types.SimpleNamespace(gpu=87 - 40 * h, memory=10))
    def memory(h: int, version: int | None = None) -> types.SimpleNamespace:
        used = (h + 1) * 1536 * 1024 * 1024
        if version is None:
            return types.SimpleNamespace(used=used + RESERVED, total=1 << 37)
        if not v2:
            raise NVMLError("Function Not Found")
        assert version == m.nvmlMemory_v2  # type: ignore[attr-defined]
        return types.SimpleNamespace(used=used, reserved=RESERVED, total=1 << 37)

    m.nvmlDeviceGetMemoryInfo = memory  # type: ignore[attr-defined]
    m.nvmlDeviceGetPowerUsage = power  # type: ignore[attr-defined]
    m.nvmlDeviceGetClockInfo = clock  # type: ignore[attr-defined]
    return m


@pytest.fixture()
def nvml() -> Iterator[types.ModuleType]:
    m = scripted_nvml()
    sys.modules["scripted_nvml"] = m
    try:
        yield m
    finally:
        del sys.modules["scripted_nvml"]


def test_each_gpu_is_read_in_its_units_and_a_missing_field_is_none(nvml: Any) -> None:
    g = Gpus.open("scripted_nvml")
    assert g.note is None
    first, second = g.read(5.0)
    assert (first.t, first.gpu, first.util_pct, first.mem_used_mib, first.power_w,
            first.sm_clock_mhz) == (5.0, 0, 87, 1536, 312, 1980)
    assert second.util_pct == 47 and second.mem_used_mib == 3072 and second.power_w is None
    g.close()
    assert nvml.calls == ["init", "shutdown"] and g.read(6.0) == []


def test_memory_used_is_nvidia_smis_figure_and_v1_where_v2_is_missing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """v2's `used` leaves out the driver's reservation (an idle H100: 0 MiB in nvidia-smi,
    480 MiB in v1); a driver without v2 gives v1's figure rather than nothing."""
    for v2, first in ((True, 1536), (False, 1536 + 480)):
        monkeypatch.setitem(sys.modules, "scripted_nvml", scripted_nvml(v2=v2))
        g = Gpus.open("scripted_nvml")
        assert g.read(1.0)[0].mem_used_mib == first
        g.close()


def test_no_gpu_is_said_not_guessed(monkeypatch: pytest.MonkeyPatch) -> None:
    absent = Gpus.open("no_such_nvml_module")
    assert absent.note == (NO_NVML if shutil.which("nvidia-smi") else NO_GPU)
    assert absent.read(1.0) == []
    monkeypatch.setattr(gpu.shutil, "which", lambda _: "/usr/bin/nvidia-smi")
    assert Gpus.open("no_such_nvml_module").note == NO_NVML  # a GPU, but no way to read it
    for m in (scripted_nvml(init_fails=True), scripted_nvml(n=0)):
        monkeypatch.setitem(sys.modules, "scripted_nvml", m)
        assert Gpus.open("scripted_nvml").note == NO_GPU
        assert m.calls in (["init"], ["init", "shutdown"])  # nothing left open


def test_the_sampler_records_gpus_at_its_ticks_though_every_scrape_fails(
        nvml: Any, tmp_path: Path) -> None:
    ticks = iter(float(i) for i in range(10_000))
    sampler = Sampler("http://127.0.0.1:9/v1", interval_s=0.01, clock=lambda: next(ticks),
                      gpus=lambda: Gpus.open("scripted_nvml"))
    sampler.start()
    while len(sampler.series.gpu) < 6:  # three ticks, two GPUs each
        pass
    series = sampler.stop()
    assert series.gaps >= 3 and not series.samples and series.gpu_note is None
    assert {s.gpu for s in series.gpu} == {0, 1} and nvml.calls[-1] == "shutdown"
    found = series.summary()
    assert (found["peak_gpu_util_pct"], found["peak_gpu_mem_used_mib"],
            found["peak_gpu_power_w"]) == (87, 3072, 312)
    assert describe(found) == (f"no /metrics sample ({series.gaps} failed scrapes); "
                               "GPU peak 87% utilisation, 3.0 GiB used, 312 W")
    # kept in the run file as typed lines, read back as the same series and sentence
    run_file = RunStore(tmp_path).new_run("bench")
    run_file.append(*series.lines())
    run = read_run(run_file.path)
    assert run.gpu == series.gpu and run.series_info is not None
    summary = server_summary(run)
    assert summary is not None and summary.text == describe(found)
    assert summary.peak_gpu_util_pct == 87 and summary.samples == 0


def test_a_run_file_without_a_series_has_no_server_summary(tmp_path: Path) -> None:
    run_file = RunStore(tmp_path).new_run("bench")
    run_file.append(RunMeta(model="m"))  # a run file from before the series was kept
    assert server_summary(read_run(run_file.path)) is None


def test_the_series_is_drawn_on_the_requests_time_axis() -> None:
    from playground.outputs.series_figure import series_figure
    from playground.server.gpu import GpuSample
    from playground.server.series import Series, ServerSample
    from tests.records import make_record

    def at(t: float, waiting: float) -> ServerSample:
        return ServerSample(t=t, running=2, waiting=waiting, kv_usage=0.5, prefix_queries=0,
                            prefix_hits=0, preemptions=0, prompt_tokens=0, generation_tokens=0)

    # sampled on the machine's monotonic clock: wall 1,000,000 s when it read 100 s
    series = Series(samples=[at(100.0, 0), at(100.25, 40)],
                    gpu=[GpuSample(t=100.25, gpu=0, util_pct=93, mem_used_mib=1,
                                   power_w=None, sm_clock_mhz=None)],
                    clock_origin=(1_000_000.0, 100.0))
    def sent_at(r: RequestRecord, t: float) -> RequestRecord:  # its clock readings moved
        raw = r.raw
        raw.t_send, raw.t_last = t, t + (raw.t_last or 0.0)
        raw.t_first_chunk = raw.t_first_content = t + (raw.t_first_content or 0.0)
        raw.token_times = [t + x for x in raw.token_times]
        r.clock_origin = (1_000_050.0, 150.0)  # the same clock, read later
        return r

    reqs = [sent_at(make_record("a", 900, 300), 100.2), sent_at(make_record("b", 100, 40), 100.1)]
    far = make_record("b", 100, 40)  # another machine's clock
    far.clock_origin = (1.7e9, 5.0)
    imported = make_record("b", 100, 40)  # no origin: times from another tool's start
    fig = series_figure(series, [*reqs, far, imported]).to_dict()
    lines = {t["name"]: t for t in fig["data"]}
    assert lines["a"]["x"] == [0.2] and lines["a"]["y"] == [pytest.approx(300)]  # at +0.2 s
    assert lines["b"]["x"] == [0.1]  # the far row is not drawn on this clock...
    assert "2 rows on another clock are not drawn" in fig["layout"]["title"]["text"]
    # a series from before clock origins were kept: every request with one is drawn
    old = series_figure(series.model_copy(update={"clock_origin": None}), [*reqs, imported])
    assert "1 rows on another clock" in old.to_dict()["layout"]["title"]["text"]
    assert lines["waiting (server)"]["x"] == [0.0, 0.25]  # ...the server's are, on it
    assert lines["waiting (server)"]["y"] == [0, 40]
    assert lines["KV cache used %"]["y"] == [50, 50] and lines["GPU 0 utilisation %"]["y"] == [93]
    assert series_figure(Series(), reqs) is None and series_figure(None, reqs) is None


def test_the_interval_follows_the_setting_or_the_machine(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from playground.server import series
    from playground.server.series import interval_for

    assert interval_for("http://127.0.0.1:8000/v1", 0.5) == 0.5  # the setting wins
    monkeypatch.setattr(series.os, "cpu_count", lambda: 2)
    assert interval_for("http://127.0.0.1:8000/v1", None) == 2.0  # a small shared machine
    assert interval_for("http://gpu-box:8000/v1", None) == 0.25  # the server is elsewhere
    monkeypatch.setattr(series.os, "cpu_count", lambda: 16)
    assert interval_for("http://localhost:8000/v1", None) == 0.25
    off = Sampler("http://127.0.0.1:9/v1", interval_s=0).start()
    series_off = off.stop()
    assert not off._thread.is_alive() and series_off.gaps == 0 and not series_off.samples
    assert describe(series_off.summary()) == "not sampled (series interval 0)"

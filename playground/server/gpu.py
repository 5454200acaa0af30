"""NVIDIA GPU telemetry beside a run: each GPU's utilisation, memory used, power and SM clock.

Read through NVML (`nvidia-ml-py`, the optional `gpu` extra; it imports as `pynvml`) by the
server sampler (server/series), at the sampler's interval, on the requests' clock. Where no
NVIDIA GPU is visible, or NVML cannot be read, there are no samples and `Gpus.note` says why in
one sentence that the CLI and the report print in place of the numbers. A field the GPU does not
report (power on some boards) is None, never 0.
"""

from __future__ import annotations

import contextlib
import importlib
import shutil
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

NO_GPU = "no GPU telemetry (no NVIDIA GPU visible)"
NO_NVML = ("no GPU telemetry (an NVIDIA GPU is visible but nvidia-ml-py is not installed: "
           "pip install 'qwen-latency-lab[gpu]')")
MIB = 1024 * 1024


class GpuSample(BaseModel):
    """One GPU at one sampler tick. `t`: the sampler's clock (time.perf_counter)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["gpu-sample"] = "gpu-sample"
    t: float
    gpu: int  # NVML's index
    util_pct: float | None
    mem_used_mib: float | None
    power_w: float | None
    sm_clock_mhz: float | None


class Gpus:
    """The visible NVIDIA GPUs, opened once per sampler; `read(t)` samples each of them."""

    def __init__(self, nvml: Any = None, handles: list[Any] | None = None,
                 note: str | None = NO_GPU) -> None:
        self.nvml, self.handles, self.note = nvml, handles or [], note

    @classmethod
    def open(cls, module: str = "pynvml") -> Gpus:
        try:
            nvml = importlib.import_module(module)
        except ImportError:
            return cls(note=NO_NVML if shutil.which("nvidia-smi") else NO_GPU)
        try:
            nvml.nvmlInit()
        except nvml.NVMLError:  # no driver, no library: nothing to read here
            return cls(note=NO_GPU)
        try:
            handles = [nvml.nvmlDeviceGetHandleByIndex(i)
                       for i in range(nvml.nvmlDeviceGetCount())]
        except nvml.NVMLError:
            handles = []
        if not handles:
            nvml.nvmlShutdown()
            return cls(note=NO_GPU)
        return cls(nvml, handles, None)

    def read(self, t: float) -> list[GpuSample]:
        if self.nvml is None:
            return []
        return [_sample(self.nvml, i, h, t) for i, h in enumerate(self.handles)]

    def close(self) -> None:
        if self.nvml is not None:
            with contextlib.suppress(self.nvml.NVMLError):
                self.nvml.nvmlShutdown()
            self.nvml = None


def _sample(nvml: Any, i: int, h: Any, t: float) -> GpuSample:
    def get(fn: Callable[[], float]) -> float | None:
        try:
            return float(fn())
        except nvml.NVMLError:  # a field this GPU does not report
            return None

    return GpuSample(
        t=t, gpu=i,
        util_pct=get(lambda: nvml.nvmlDeviceGetUtilizationRates(h).gpu),
        mem_used_mib=get(lambda: _mem_used(nvml, h) / MIB),
        power_w=get(lambda: nvml.nvmlDeviceGetPowerUsage(h) / 1000),  # NVML: milliwatts
        sm_clock_mhz=get(lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)))


def _mem_used(nvml: Any, h: Any) -> int:
    """Memory in use as nvidia-smi counts it: NVML's v2 query, whose `used` leaves out what the
    driver reserves for itself (the v1 query counts that as used: ~480 MiB on an idle H100 that
    nvidia-smi showed at 0). Older drivers or bindings without v2 get v1."""
    version = getattr(nvml, "nvmlMemory_v2", None)
    if version is not None:
        try:
            return int(nvml.nvmlDeviceGetMemoryInfo(h, version=version).used)
        except (nvml.NVMLError, TypeError):  # a driver without the v2 query
            pass
    return int(nvml.nvmlDeviceGetMemoryInfo(h).used)


def peaks(samples: list[GpuSample]) -> dict[str, float | None]:
    """The highest reading of each field over every GPU and tick (None where none was read)."""
    def peak(field: str) -> float | None:
        vals = [v for s in samples if (v := getattr(s, field)) is not None]
        return max(vals) if vals else None

    return {"peak_gpu_util_pct": peak("util_pct"), "peak_gpu_mem_used_mib": peak("mem_used_mib"),
            "peak_gpu_power_w": peak("power_w"), "peak_gpu_sm_clock_mhz": peak("sm_clock_mhz")}

"""Facts about the machine a measurement ran on: CPU, memory, GPU (best effort, no extras)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path
from typing import Any


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError):
        pass
    return None


def gpus() -> list[dict[str, str]]:
    """One entry per NVIDIA GPU (name, driver, memory) from nvidia-smi; [] without one."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader"], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = []
    for line in out.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            rows.append({"name": parts[0], "driver": parts[1], "memory": parts[2]})
    return rows


def describe() -> dict[str, Any]:
    g = gpus()
    accel = ", ".join(f"{x['name']} (driver {x['driver']}, {x['memory']})" for x in g)
    return {"cpu": cpu_model(), "cores": os.cpu_count(), "memory_gib": memory_gib(),
            "gpus": g, "accelerator": accel or "none (CPU only)", "host": platform.node(),
            "os": f"{platform.system()} {platform.release()}",
            "python": platform.python_version()}

"""CPU time by process group on this machine, from /proc (Linux; elsewhere every reading is
empty): what each part of a UI benchmark -- Chromium's processes by type, the app, vLLM's API
server and its engine -- spent in a window, such as the moments after a click.

    before = snapshot(); ...; spent = since(before)   # {"chromium renderer": 0.03, ...} seconds
"""

from __future__ import annotations

import os
import re
from pathlib import Path

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
TYPE_RE = re.compile(r"--type=([a-z-]+)")


def group(comm: str, cmdline: str) -> str:
    """Which part of the benchmark a process is (its name in /proc and its command line)."""
    if comm.startswith("VLLM::"):
        return "vllm engine"
    if "vllm.entrypoints" in cmdline or " vllm serve" in f" {cmdline}":
        return "vllm api server"
    if "chrom" in cmdline.split(" ", 1)[0]:
        kind = TYPE_RE.search(cmdline)
        return f"chromium {kind.group(1) if kind else 'browser'}"
    if cmdline.split(" ")[1:2] and cmdline.split(" ")[1].endswith("app.py"):
        return "app"
    if "ui_fidelity" in cmdline:
        return "benchmark"
    return "other"


def snapshot(proc: Path = Path("/proc")) -> dict[str, float]:
    """CPU seconds (user + system) used so far by each group's live processes."""
    out: dict[str, float] = {}
    for stat in proc.glob("[0-9]*/stat"):
        try:
            raw = stat.read_text()
            cmdline = (stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode(
                "utf-8", "replace").strip()
        except OSError:  # gone meanwhile
            continue
        comm = raw[raw.find("(") + 1:raw.rfind(")")]
        fields = raw[raw.rfind(")") + 2:].split()
        name = group(comm, cmdline)
        out[name] = out.get(name, 0.0) + (int(fields[11]) + int(fields[12])) * TICK_S
    return out


def since(before: dict[str, float], proc: Path = Path("/proc")) -> dict[str, float]:
    """CPU seconds each group used since `before` (a process that ended meanwhile is missed:
    its time is lost with it)."""
    now = snapshot(proc)
    return {k: round(max(0.0, now.get(k, 0.0) - before.get(k, 0.0)), 3)
            for k in sorted(set(now) | set(before))}

"""Processes as /proc shows them, for the tests that check nothing is left behind."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def _stats() -> list[tuple[int, list[str]]]:
    """(pid, the stat fields after the command name: state, ppid, pgrp, ...) of every live
    process; zombies are left out (gone for our purpose)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z":
            out.append((int(d.name), fields))
    return out


def children(pid: int) -> list[int]:
    return [p for p, f in _stats() if int(f[1]) == pid]


def group(pgid: int) -> list[int]:
    return [p for p, f in _stats() if int(f[2]) == pgid]


def wait_for(cond: Callable[[], bool], timeout: float, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(step)
    return bool(cond())


def descendants(pid: int) -> list[int]:
    """Every live process below `pid` (children, their children, ...)."""
    found, todo = [], [pid]
    stats = _stats()
    while todo:
        parent = todo.pop()
        kids = [p for p, f in stats if int(f[1]) == parent]
        found += kids
        todo += kids
    return found


def alive(pids: list[int]) -> list[int]:
    live = {p for p, _ in _stats()}
    return [p for p in pids if p in live]


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(
            "utf-8", "replace").strip()
    except OSError:
        return ""


def engine_cores(pgid: int) -> list[int]:
    """vLLM's engine processes in a process group: they name themselves `VLLM::EngineCore`
    (and `VLLM::Worker` below it) -- a command line with no "vllm" or "--port" in it."""
    return [p for p in group(pgid) if cmdline(p).startswith("VLLM::EngineCore")]


def own(pattern: str) -> list[int]:
    """This process's own descendants whose command line contains `pattern` (never a
    machine-wide search: another test run's processes are not ours)."""
    return [p for p in descendants(os.getpid()) if pattern in cmdline(p)]

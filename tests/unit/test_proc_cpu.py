"""benchmarks/proc_cpu: CPU time by process group, read from a /proc tree (a made-up one here,
so the numbers are known)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

from playground.settings import REPO_ROOT


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("proc_cpu",
                                                  REPO_ROOT / "benchmarks" / "proc_cpu.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fake_proc(root: Path, procs: dict[int, tuple[str, str, int, int]]) -> None:
    """pid -> (comm, command line, utime ticks, stime ticks), written as /proc writes them."""
    for pid, (comm, cmd, utime, stime) in procs.items():
        d = root / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        # fields after "(comm)": state, ppid, pgrp, session, tty, tpgid, flags, minflt, cminflt,
        # majflt, cmajflt, utime, stime, ...
        (d / "stat").write_text(f"{pid} ({comm}) S 1 1 1 0 -1 0 0 0 0 0 {utime} {stime} 0 0\n")
        (d / "cmdline").write_bytes(cmd.replace(" ", "\0").encode() + b"\0")


PROCS = {
    10: ("VLLM::EngineCor", "python -m vllm.entrypoints.openai.api_server", 500, 100),
    11: ("python", "/x/python -m vllm.entrypoints.openai.api_server --port 8000", 40, 10),
    12: ("chromium", "/usr/lib/chromium/chromium --type=renderer --lang=en", 30, 5),
    13: ("chromium", "/usr/lib/chromium/chromium --type=gpu-process", 7, 3),
    14: ("chromium", "/usr/lib/chromium/chromium --headless --no-sandbox", 2, 0),
    15: ("python", "/v/bin/python /repo/app.py", 20, 5),
    16: ("python", "/v/bin/python benchmarks/ui_fidelity.py --rows live", 1, 0),
    17: ("bash", "bash", 1, 1),
    18: ("chromium", "/usr/lib/chromium/chromium --type=renderer --lang=en", 3, 0),
}


def test_each_process_is_counted_in_its_group(tmp_path: Path) -> None:
    pc = load()
    fake_proc(tmp_path, PROCS)
    got = pc.snapshot(tmp_path)
    t = pc.TICK_S
    # the engine is known by its process name, though its command line is the API server's
    assert got["vllm engine"] == 600 * t
    assert got["vllm api server"] == 50 * t
    assert got["chromium renderer"] == 38 * t  # both renderers
    assert got["chromium gpu-process"] == 10 * t
    assert got["chromium browser"] == 2 * t
    assert got["app"] == 25 * t
    assert got["benchmark"] == 1 * t
    assert got["other"] == 2 * t


def test_since_is_what_each_group_used_meanwhile(tmp_path: Path) -> None:
    pc = load()
    fake_proc(tmp_path, PROCS)
    before = pc.snapshot(tmp_path)
    later = dict(PROCS)
    later[12] = ("chromium", "/usr/lib/chromium/chromium --type=renderer --lang=en", 37, 8)
    later[11] = ("python", "/x/python -m vllm.entrypoints.openai.api_server", 41, 10)
    fake_proc(tmp_path, later)
    spent = pc.since(before, tmp_path)
    t = pc.TICK_S
    assert spent["chromium renderer"] == round(10 * t, 3)
    assert spent["vllm api server"] == round(1 * t, 3)
    assert spent["vllm engine"] == 0
    assert spent["app"] == 0


def test_a_process_gone_meanwhile_is_skipped(tmp_path: Path) -> None:
    pc = load()
    fake_proc(tmp_path, {20: ("python", "/v/bin/python /repo/app.py", 5, 0)})
    (tmp_path / "21").mkdir()  # its command line is gone before it is read
    (tmp_path / "21" / "stat").write_text("21 (python) S 1 1 1 0 -1 0 0 0 0 0 9 9 0 0\n")
    assert pc.snapshot(tmp_path) == {"app": 5 * pc.TICK_S}

"""The embedded Ray cluster's clean-up: nothing of it outlives the process that started it.

Ray fate-shares the embedded cluster's GCS and raylet with the driver, and the readers go with the
raylet; but its agents (dashboard, runtime env) then wait about a minute for the dead GCS before
they exit. `watch()` starts a small watcher (standard library only, a session of its own) that
keeps a list of this process's Ray descendants -- by command line: Ray's binaries and `ray::`
process titles -- and, once this process is gone however it went (SIGKILL included), SIGKILLs
each of them that is still the same process (its start time unchanged).
"""

from __future__ import annotations

import os
import subprocess
import sys

_WATCHER = """\
import os, signal, sys, time
driver, me = int(sys.argv[1]), os.getpid()
def stat(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()
def cmd(pid):
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        return f.read().replace(b"\\0", b" ").decode("utf-8", "replace")
def ray_family():
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                f = stat(d)
            except OSError:
                continue
            kids.setdefault(int(f[1]), []).append((int(d), f[19]))
    out, todo = {}, [driver]
    while todo:
        for pid, start in kids.get(todo.pop(), []):
            if pid == me:
                continue
            todo.append(pid)
            try:
                c = cmd(pid)
            except OSError:
                continue
            if c.startswith("ray::") or "/ray/" in c:
                out[pid] = start
    return out
seen = {}
while os.getppid() == driver:
    seen.update(ray_family())
    time.sleep(0.5)
for pid, start in seen.items():
    try:
        if stat(pid)[19] == start:
            os.kill(pid, signal.SIGKILL)
    except (OSError, IndexError):
        pass
"""

_started: list[subprocess.Popen[bytes]] = []


def watch() -> None:
    """Start the watcher once per process (Linux only; elsewhere Ray's own fate-sharing)."""
    if _started or not sys.platform.startswith("linux"):
        return
    _started.append(subprocess.Popen(
        [sys.executable, "-c", _WATCHER, str(os.getpid())], stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))

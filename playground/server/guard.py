"""The guard: a tiny process at the head of each managed server's process group, so that the
server and everything it forks end with the app however the app ends (Linux)."""

from __future__ import annotations

import os
import sys

# The guard: the first process of a managed server's group (no preexec_fn: it is unsafe in a
# threaded program such as the UI). It asks Linux for SIGTERM when the thread that started it
# dies (PR_SET_PDEATHSIG; checking that parent is still there), starts the server as its child
# in the same process group, and on SIGTERM/SIGINT -- from `stop()` or from its parent's death,
# however that parent died, SIGKILL included -- signals the whole group (the server and the
# engine processes it forked) and SIGKILLs what is left after a grace period. When the server
# exits on its own, the guard exits with its code. A server that does not accept connections
# yet (still starting: nothing in flight to drain; vLLM mid-start ignores SIGTERM) gets a short
# grace instead of the full one. Only the standard library: the server's Python may be another
# environment.
_GUARD = """\
import ctypes, os, signal, socket, sys, threading, time
ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)
if os.getppid() != int(sys.argv[1]):
    os._exit(70)
child = os.fork()
if child == 0:
    os.execvp(sys.argv[4], sys.argv[4:])
served = []
def watch():  # until the server first accepts a connection (a stop may close it at once)
    host, _, port = sys.argv[3].rpartition(":")
    while not served:
        try:
            socket.create_connection((host, int(port)), timeout=0.5).close()
            served.append(True)
        except (OSError, ValueError):
            time.sleep(0.5)
if sys.argv[3].endswith(":0"):
    served.append(True)
else:
    threading.Thread(target=watch, daemon=True).start()
def stop(signum, frame):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    up = bool(served)
    grace = float(sys.argv[2]) if up else STARTING_GRACE_S
    print(f"[guard] stop ({'serving' if up else 'still starting'}): SIGTERM to the group, "
          f"SIGKILL after {grace:g} s", file=sys.stderr, flush=True)
    os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            if os.waitpid(child, os.WNOHANG)[0]:
                break
        except ChildProcessError:
            break
        time.sleep(0.1)
    time.sleep(0.5)
    os.killpg(0, signal.SIGKILL)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
_, status = os.waitpid(child, 0)
os._exit(os.waitstatus_to_exitcode(status) % 256)
"""
GUARD_GRACE_S = 10.0  # a serving server: time to end its requests and exit
STARTING_GRACE_S = 2.0  # a server that accepts no connections yet


def guarded(command: list[str], python: str = sys.executable,
            listen: tuple[str, int] | None = None) -> list[str]:
    """`command` behind the guard (Linux; elsewhere unchanged). `listen`: where the server
    accepts connections once it is up (host, port); until then a stop is quick."""
    if not sys.platform.startswith("linux"):
        return command
    host, port = listen or ("", 0)
    guard = _GUARD.replace("STARTING_GRACE_S", repr(STARTING_GRACE_S))
    return [python, "-c", guard, str(os.getpid()), str(GUARD_GRACE_S), f"{host}:{port}",
            *command]

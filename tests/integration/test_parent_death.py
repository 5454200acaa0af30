"""A managed server and every process it forks (vLLM's engine core, here a stand-in) end with
the app however the app ends -- SIGTERM, SIGINT, SIGKILL -- and with `stop()`; without
preexec_fn (unsafe in a threaded program). A stand-in server that forks a grandchild makes this
take seconds; the real vLLM case is test_server_lifecycle's SIGKILL test."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from playground.server import guard, managed
from playground.server.managed import ManagedServer, ServerConfig, free_port
from tests.procs import group, wait_for

# a "server" that forks an "engine" (a grandchild) and then serves forever
SERVER = ("import subprocess, sys, time; "
          "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)']); "
          "time.sleep(300)")

PARENT = f"""
import signal, sys, threading, time
signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal (see no_orphans)
from pathlib import Path
from playground.server.managed import ManagedServer, ServerConfig

class Fake(ManagedServer):
    def command(self):
        return [sys.executable, "-c", {SERVER!r}]

s = Fake(ServerConfig(model="m"), Path(sys.argv[1]))
hold = threading.Event()
def start():  # the UI starts servers from a thread of a threaded app
    s.start(); print(s.proc.pid, flush=True); hold.wait()
threading.Thread(target=start, daemon=True).start()
time.sleep(300)
"""


class Fake(ManagedServer):
    def command(self) -> list[str]:
        return [sys.executable, "-c", SERVER]


def test_no_preexec_fn_and_stop_ends_the_whole_group(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}
    real = subprocess.Popen

    def spy(cmd, **kw):  # type: ignore[no-untyped-def]
        seen.update(kw, cmd=cmd)
        return real(cmd, **kw)

    monkeypatch.setattr(managed.subprocess, "Popen", spy)
    s = Fake(ServerConfig(model="m"), tmp_path / "s.log")
    s.start()
    assert s.proc is not None
    pgid = s.proc.pid
    try:
        assert "preexec_fn" not in seen and seen["start_new_session"] is True
        assert seen["cmd"][-3:] == s.command()  # type: ignore[index]
        assert wait_for(lambda: len(group(pgid)) == 3, 10)  # guard, server, engine
    finally:
        s.stop()
    assert not s.running and wait_for(lambda: not group(pgid), 15)


def test_a_server_that_exits_by_itself_reports_its_code(tmp_path: Path) -> None:
    class Dies(ManagedServer):
        def command(self) -> list[str]:
            return [sys.executable, "-c", "import sys; sys.exit(3)"]

    s = Dies(ServerConfig(model="m"), tmp_path / "d.log")
    s.start()
    assert s.proc is not None and s.proc.wait(timeout=20) == 3


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_a_threaded_parent_ending_takes_the_server_and_its_engine(tmp_path: Path,
                                                                  sig: signal.Signals) -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "s.log")],
                              stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pgid = int(parent.stdout.readline())
    assert wait_for(lambda: len(group(pgid)) == 3, 10)
    parent.send_signal(sig)
    parent.wait(timeout=10)
    # bounded: the guard's grace period (10 s) plus a margin
    assert wait_for(lambda: not group(pgid), 20), f"left after {sig.name}: {group(pgid)}"


# a server still starting: it ignores SIGTERM (as vLLM does mid-start) and listens nowhere yet
STARTING = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"
# a server up and serving: it accepts connections on its port and exits on SIGTERM
SERVING = ("import socket, sys, time; s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])))"
           "; s.listen(); s.accept(); print('conn' + 'ected', flush=True); time.sleep(300)")


@pytest.mark.parametrize("state", ["still starting", "serving"])
def test_stop_gives_a_starting_server_a_short_grace_and_a_serving_one_the_full(
        tmp_path: Path, state: str) -> None:
    """Nothing is in flight before the server accepts connections: a stop then does not wait
    out the full grace (a Stop or a killed app mid-start ends the server in ~2 s, not ~10 s).
    The guard says in the server's log which grace it gave."""
    port = free_port()
    code = STARTING if state == "still starting" else SERVING

    class Server(ManagedServer):
        def command(self) -> list[str]:
            return [sys.executable, "-c", code, str(port)]

    log = tmp_path / "s.log"
    s = Server(ServerConfig(model="m", port=port), log)
    s.start()
    assert s.proc is not None
    pgid = s.proc.pid
    try:
        assert wait_for(lambda: len(group(pgid)) == 2, 10)  # guard, server
        if state == "serving":
            # the guard's watch connected: from now on the server counts as serving
            assert wait_for(lambda: "\nconnected" in log.read_text(), 10)
    finally:
        s.stop()
    assert wait_for(lambda: not group(pgid), 20)
    said = [line for line in log.read_text().splitlines() if line.startswith("[guard]")]
    grace = guard.STARTING_GRACE_S if state == "still starting" else guard.GUARD_GRACE_S
    assert said == [f"[guard] stop ({state}): SIGTERM to the group, SIGKILL after {grace:g} s"]

"""A `playground` command ended by a signal once its servers' engines exist, and proof that
nothing it started is left: every process of every managed server's group, vLLM's EngineCore
included (found by process group: the engine processes name themselves `VLLM::EngineCore`, a
command line with no "vllm" or port in it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from playground.server.http import is_healthy
from tests.procs import alive, children, engine_cores, group, wait_for

# The app as a terminal starts it: Ctrl-C raises KeyboardInterrupt. (A test runner started as
# a background job of a non-interactive shell passes SIGINT on as "ignored", and Python then
# never installs its handler: the SIGINT case would test nothing.)
AS_FROM_A_TERMINAL = ("import runpy, signal, sys; "
                      "signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "sys.argv = ['playground', *sys.argv[1:]]; "
                      "runpy.run_module('playground.cli', run_name='__main__', alter_sys=True)")


def server_groups(app: int) -> list[int]:
    """The managed servers' process groups: each guard is a child of the app that leads its
    own group (start_new_session)."""
    return [c for c in children(app) if group(c) and os.getpgid(c) == c]


def ends_clean(cmd: list[str], env: dict[str, str], n_servers: int, sig: signal.Signals, *,
               until_healthy: str | None = None, log: Path | None = None,
               before_signal: Callable[[], None] | None = None) -> None:
    """Start `playground CMD`; wait until each of its `n_servers` servers' groups holds vLLM's
    EngineCore (10-30 s into start-up here) -- and, with `until_healthy`, until that URL
    answers; run `before_signal`; send `sig`; require every process of those groups to be gone
    within a bounded time (the guard's grace, 10 s, plus vLLM's own shutdown)."""
    out = log.open("wb") if log else subprocess.DEVNULL
    app = subprocess.Popen([sys.executable, "-c", AS_FROM_A_TERMINAL, *cmd], env=env,
                           stdout=out, stderr=subprocess.STDOUT)
    groups: list[int] = []
    try:
        def ready() -> bool:
            if app.poll() is not None:
                return True
            found = server_groups(app.pid)
            if len(found) != n_servers or not all(engine_cores(g) for g in found):
                return False
            return until_healthy is None or is_healthy(until_healthy)

        assert wait_for(ready, 600, step=0.5), (
            f"servers: {[group(g) for g in server_groups(app.pid)]}")
        assert app.poll() is None, log.read_text()[-2000:] if log else f"exit {app.returncode}"
        groups = server_groups(app.pid)
        engines = [e for g in groups for e in engine_cores(g)]
        if before_signal is not None:
            before_signal()
        app.send_signal(sig)
        app.wait(timeout=60)
        assert wait_for(lambda: not any(group(g) for g in groups), 40), (
            f"left after {sig.name}: {[group(g) for g in groups]}")
        assert engines and not alive(engines)
    finally:
        if app.poll() is None:
            app.kill()
        for g in groups:
            for pid in group(g):
                os.kill(pid, signal.SIGKILL)
        if log:
            out.close()  # type: ignore[union-attr]

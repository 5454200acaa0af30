"""No process left behind: `playground bench` with two managed vLLM servers still starting
(SIGTERM), `playground ui` (the embedded default) starting its server (SIGINT), and `playground
serve` with its server up (SIGKILL): after a bounded time nothing the command started remains,
vLLM's EngineCore included -- each signal is sent once the engine processes exist.
Found by an independent review: SIGTERM 30 s into `bench compiled-vs-eager` left a vLLM API
server and its EngineCore running with PPID 1."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from playground.server.http import is_healthy
from playground.server.managed import free_port
from tests.procs import alive, children, engine_cores, group, wait_for

pytestmark = pytest.mark.server


def server_groups(app: int) -> list[int]:
    """The managed servers' process groups: each guard is a child of the app that leads its
    own group (start_new_session)."""
    return [c for c in children(app) if group(c) and os.getpgid(c) == c]


@pytest.fixture()
def env(demo_model_dir: Path, tmp_path: Path) -> dict[str, str]:
    model = tmp_path / "model"
    shutil.copytree(demo_model_dir, model, ignore=shutil.ignore_patterns("*.safetensors"))
    return {**os.environ, "PLAYGROUND_CACHE_DIR": str(tmp_path / "cache"),
            "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"), "PLAYGROUND_SERVE_MODEL": str(model),
            "PLAYGROUND_WARMUP": "off"}


# The app as a terminal starts it: Ctrl-C raises KeyboardInterrupt. (A test runner started as
# a background job of a non-interactive shell passes SIGINT on as "ignored", and Python then
# never installs its handler: the SIGINT case would test nothing.)
AS_FROM_A_TERMINAL = ("import runpy, signal, sys; "
                      "signal.signal(signal.SIGINT, signal.default_int_handler); "
                      "sys.argv = ['playground', *sys.argv[1:]]; "
                      "runpy.run_module('playground.cli', run_name='__main__', alter_sys=True)")


def ends_clean(cmd: list[str], env: dict[str, str], n_servers: int, sig: signal.Signals,
               *, until_healthy: str | None = None) -> None:
    """Start `playground CMD`, wait until each of its servers' groups holds vLLM's EngineCore
    (the process that outlived its parent in the review; it appears 10-30 s into start-up
    here) -- or until `until_healthy` answers -- then send `sig` and require every process of
    those groups to be gone within a bounded time."""
    app = subprocess.Popen([sys.executable, "-c", AS_FROM_A_TERMINAL, *cmd], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
        assert app.poll() is None, app.stderr.read().decode()[-2000:] if app.stderr else ""
        groups = server_groups(app.pid)
        engines = [e for g in groups for e in engine_cores(g)]
        app.send_signal(sig)
        app.wait(timeout=60)
        # bounded: the guard's grace (10 s) plus vLLM's own shutdown
        assert wait_for(lambda: not any(group(g) for g in groups), 40), (
            f"left after {sig.name}: {[group(g) for g in groups]}")
        assert engines and not alive(engines)
    finally:
        if app.poll() is None:
            app.kill()
        for g in groups:
            for pid in group(g):
                os.kill(pid, signal.SIGKILL)


# One command per signal, every command and every signal covered: each case waits for the
# engine processes (a signal 3 s into start-up only ever met the API server's imports).
def test_bench_with_two_servers_mid_start_sigterm(env: dict[str, str], tmp_path: Path) -> None:
    ends_clean(["bench", "compiled-vs-eager", "--out", str(tmp_path / "out")], env, 2,
               signal.SIGTERM)


def test_ui_mid_start_sigint(env: dict[str, str]) -> None:
    ends_clean(["ui", "--port", str(free_port()), "--base-url",
                f"http://127.0.0.1:{free_port()}/v1"], env, 1, signal.SIGINT)


def test_serve_running_sigkill(env: dict[str, str]) -> None:
    """The app SIGKILLed (no cleanup code of its own runs) with its server up and answering."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    ends_clean(["serve", "eager", "--base-url", url], env, 1, signal.SIGKILL, until_healthy=url)
    assert not is_healthy(url)

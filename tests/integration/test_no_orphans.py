"""No process left behind: `playground bench` with two managed vLLM servers still starting,
`playground serve` and `playground ui` (the embedded default), each ended by SIGTERM, SIGINT and
SIGKILL while its servers start: after a bounded time nothing the command started remains.
Found by an independent review: SIGTERM 30 s into `bench compiled-vs-eager` left a vLLM API
server and its EngineCore running with PPID 1."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from playground.server.managed import free_port
from tests.procs import children, group, wait_for

pytestmark = pytest.mark.server

SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGKILL]






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


def ends_clean(cmd: list[str], env: dict[str, str], n_servers: int, sig: signal.Signals) -> None:
    app = subprocess.Popen([sys.executable, "-c", AS_FROM_A_TERMINAL, *cmd], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    groups: list[int] = []
    try:
        # mid-start: every server's group exists and its vLLM process is up (still loading)
        assert wait_for(lambda: app.poll() is not None or (
            len(server_groups(app.pid)) == n_servers
            and all(len(group(g)) >= 2 for g in server_groups(app.pid))), 60)
        assert app.poll() is None, (
            app.stderr.read().decode()[-2000:] if app.poll() is not None and app.stderr
            else f"servers: {server_groups(app.pid)}")
        groups = server_groups(app.pid)
        time.sleep(3)  # into vLLM's start-up (imports, engine processes)
        app.send_signal(sig)
        app.wait(timeout=60)
        # bounded: the guard's grace (10 s) plus vLLM's own shutdown
        assert wait_for(lambda: not any(group(g) for g in groups), 40), (
            f"left after {sig.name}: {[group(g) for g in groups]}")
    finally:
        if app.poll() is None:
            app.kill()
        for g in groups:
            for pid in group(g):
                os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_bench_with_two_servers_mid_start(env: dict[str, str], tmp_path: Path,
                                          sig: signal.Signals) -> None:
    ends_clean(["bench", "compiled-vs-eager", "--out", str(tmp_path / "out")], env, 2, sig)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_serve_mid_start(env: dict[str, str], sig: signal.Signals) -> None:
    ends_clean(["serve", "eager", "--base-url", f"http://127.0.0.1:{free_port()}/v1"], env, 1,
               sig)


@pytest.mark.parametrize("sig", SIGNALS, ids=lambda s: s.name)
def test_ui_mid_start(env: dict[str, str], sig: signal.Signals) -> None:
    ends_clean(["ui", "--port", str(free_port()), "--base-url",
                f"http://127.0.0.1:{free_port()}/v1"], env, 1, sig)

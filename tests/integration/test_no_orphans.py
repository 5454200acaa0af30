"""No process left behind: `playground bench` with two managed vLLM servers still starting
(SIGTERM), `playground ui` (the embedded default) starting its server (SIGINT), and `playground
serve` with its server up (SIGKILL, in test_engines_and_clients): after a bounded time nothing
the command started remains, vLLM's EngineCore included -- each signal is sent once the engine
processes exist.
Found by an independent review: SIGTERM 30 s into `bench compiled-vs-eager` left a vLLM API
server and its EngineCore running with PPID 1."""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import pytest

from playground.server.managed import free_port
from tests.orphans import ends_clean

pytestmark = pytest.mark.server


@pytest.fixture()
def env(demo_model_dir: Path, tmp_path: Path) -> dict[str, str]:
    model = tmp_path / "model"
    shutil.copytree(demo_model_dir, model, ignore=shutil.ignore_patterns("*.safetensors"))
    return {**os.environ, "PLAYGROUND_CACHE_DIR": str(tmp_path / "cache"),
            "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"), "PLAYGROUND_SERVE_MODEL": str(model),
            "PLAYGROUND_WARMUP": "off"}


# One command per signal, each case waiting for the engine processes (a signal 3 s into
# start-up only ever met the API server's imports). The SIGKILL case -- `playground serve`
# killed with its server up and answering -- is test_engines_and_clients'
# test_local_model_directory_is_served_by_path_and_usable_by_the_board, which starts that
# server anyway.
def test_bench_with_two_servers_mid_start_sigterm(env: dict[str, str], tmp_path: Path) -> None:
    ends_clean(["bench", "compiled-vs-eager", "--out", str(tmp_path / "out")], env, 2,
               signal.SIGTERM)


def test_ui_mid_start_sigint(env: dict[str, str]) -> None:
    ends_clean(["ui", "--port", str(free_port()), "--base-url",
                f"http://127.0.0.1:{free_port()}/v1"], env, 1, signal.SIGINT)

"""The seed systems beside vLLM, for real: a Transformers server managed by the same lifecycle and
compared with the vLLM test server, a local model directory served by path, and LangChain's
ChatOpenAI as a client variant (docs/servers.md, docs/measurement.md). No durations asserted."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from playground.core import request
from playground.core.pool import ClientPool
from playground.core.runner import new_recording, run_to_end
from playground.lab.bench import run_experiment
from playground.lab.ladder import plan
from playground.lab.store import read_run
from playground.server.demo_model import has_weights, is_demo_dir
from playground.server.embedded import preset_config
from playground.server.http import is_healthy, server_info
from playground.server.managed import ManagedServer, free_port
from playground.server.presets import load_server_presets
from playground.settings import REPO_ROOT, Settings
from playground.specs.experiments import experiment_from_dict
from playground.specs.ladders import load_ladder
from playground.specs.presets import PresetLibrary, Variant
from tests.conftest import Keyed
from tests.orphans import ends_clean

pytestmark = pytest.mark.server



@pytest.fixture(scope="module")
def model_dir(demo_model_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the demo model's directory: a local model directory given by path."""
    target = tmp_path_factory.mktemp("local-model") / "qwen3-demo-local"
    shutil.copytree(demo_model_dir, target, ignore=shutil.ignore_patterns("*.safetensors"))
    return target


@pytest.fixture(scope="module")
def transformers_server(model_dir: Path, tmp_path_factory: pytest.TempPathFactory
                        ) -> Iterator[ManagedServer]:
    cache = tmp_path_factory.mktemp("tf-cache")
    settings = Settings(cache_dir=cache, runs_dir=cache / "runs")
    presets, errors = load_server_presets(REPO_ROOT / "presets")
    assert not errors
    config, _ = preset_config(settings, free_port(), presets["transformers"], str(model_dir))
    server = ManagedServer(config, cache / "logs" / "transformers.log")
    server.start()
    try:
        server.wait_ready(timeout_s=600)
        yield server
    finally:
        server.stop()


def _group_alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_transformers_preset_starts_serves_and_stops_like_vllm(
        transformers_server: ManagedServer, model_dir: Path) -> None:
    s = transformers_server
    c = s.config
    assert c.engine == "transformers" and c.served_model_name == "Qwen/Qwen3-0.6B"
    assert s.command()[1:4] == ["-m", "transformers.cli.transformers", "serve"]
    # the demo model got saved random weights first (Transformers has no dummy weights), and
    # stays a demo model; vLLM now loads the same file instead of inventing weights
    assert has_weights(model_dir) and is_demo_dir(model_dir)
    assert is_healthy(c.base_url)
    assert "Uvicorn running" in s.log_tail(200) or "Application startup" in s.log_tail(200)
    # a request naming the served model reaches the pinned model, in Transformers' dialect
    v = Variant(name="tf", engine="transformers", stream=True, thinking=False,
                temperature=0, max_tokens=8, ignore_eos=True)
    rec = new_recording(v, request.build(v, "hello", "Qwen/Qwen3-0.6B"), c.base_url)

    async def go() -> None:
        pool = ClientPool("EMPTY")
        try:
            await run_to_end(pool, [rec], mode="concurrent", timeout_s=120)
        finally:
            await pool.aclose()

    asyncio.run(go())
    assert rec.error is None and rec.status == "done", rec.error
    # ignore_eos went over as generation_config.min_new_tokens: exactly max_tokens tokens
    assert rec.metrics().completion_tokens == 8 and rec.raw.finish_reason == "length"
    assert "stream_options" not in rec.request.body()


def test_transformers_lifecycle_stop_leaves_nothing(model_dir: Path, tmp_path: Path) -> None:
    settings = Settings(cache_dir=tmp_path, runs_dir=tmp_path / "runs")
    presets, _ = load_server_presets(REPO_ROOT / "presets")
    config, _ = preset_config(settings, free_port(), presets["transformers"], str(model_dir))
    server = ManagedServer(config, tmp_path / "logs" / "tf.log")
    server.restart(timeout_s=600)  # the same lifecycle: stop (nothing) + start + wait
    assert server.proc is not None
    pid = server.proc.pid
    assert server.running and is_healthy(config.base_url)
    server.stop()
    assert not server.running and not is_healthy(config.base_url)
    deadline = time.monotonic() + 10
    while _group_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _group_alive(pid), "a Transformers process outlived stop()"


def test_vllm_and_transformers_compared_in_one_experiment(
        vllm_server: str, transformers_server: ManagedServer, tmp_path: Path) -> None:
    settings = Settings(base_url=vllm_server, runs_dir=tmp_path / "runs", timeout_s=120)
    library = PresetLibrary(REPO_ROOT / "presets", tmp_path / "user")
    same = dict(stream=True, thinking=False, temperature=0, max_tokens=12, ignore_eos=True,
                prompt="minimal")
    exp = experiment_from_dict({
        "name": "engines", "baseline": "transformers", "examples": 2, "repetitions": 1,
        "warmup": 1, "variants": [
            {"name": "transformers", "base_url": transformers_server.config.base_url,
             "engine": "transformers", **same},
            {"name": "vllm", "base_url": vllm_server, **same}]}, library, source="test")

    async def go() -> Path:
        path = None
        async for ev in run_experiment(settings, exp):
            if ev.kind == "started":
                path = ev.path
        assert path is not None
        return path

    run = read_run(asyncio.run(go()))
    timed = run.timed
    assert {r.name for r in timed} == {"transformers", "vllm"} and len(timed) == 4
    for r in timed:
        assert r.ok, r.error
        assert r.metrics.completion_tokens == 12  # the same work on both engines
        assert r.metrics.ttft_ms is not None and r.metrics.tpot_ms is not None
    # the run's model and environment came from the vLLM side
    assert run.meta.model == "Qwen/Qwen3-0.6B"


def test_ladder_step_a_runs_on_a_transformers_server(transformers_server: ManagedServer) -> None:
    ladder = load_ladder(REPO_ROOT / "presets", "seed-004")
    steps = plan(ladder, REPO_ROOT / "presets")
    assert isinstance(steps[0], str) and "transformers" in steps[0]  # none running: says how
    url = transformers_server.config.base_url
    steps = plan(ladder, REPO_ROOT / "presets", url)
    a = steps[0]
    assert isinstance(a, Variant) and a.engine == "transformers" and a.base_url == url
    assert all(isinstance(s, Variant) and s.engine == "vllm" for s in steps[1:])


def test_local_model_directory_is_served_by_path_and_usable_by_the_board(
        transformers_server: ManagedServer, model_dir: Path, tmp_path: Path) -> None:
    """The demo model's directory given as a path (with the weights the Transformers server
    saved: vLLM loads them, no dummy weights), then the claims board against it; then
    `playground serve` is SIGKILLed with its server up and answering -- no code of its own
    runs -- and its server's whole process group, EngineCore included, must go (the SIGKILL
    case of test_no_orphans)."""
    assert has_weights(model_dir)
    url = f"http://127.0.0.1:{free_port()}/v1"
    env = {**os.environ, "PLAYGROUND_CACHE_DIR": str(tmp_path / "cache"),
           "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"), "PLAYGROUND_WARMUP": "off"}

    def the_board() -> None:
        info = server_info(url, None)
        assert [m.root for m in info.models] == [str(model_dir)]
        out = subprocess.run(
            [sys.executable, "-m", "playground.cli", "claims", "--base-url", url, "--only",
             "streaming", "--examples", "1", "--repetitions", "1", "--no-api-checks",
             "--out", str(tmp_path / "board")], capture_output=True, text=True, timeout=600,
            env=env)
        assert out.returncode == 0, out.stderr[-2000:]
        board = json.loads((tmp_path / "board" / "claims.json").read_text("utf-8"))
        claim = next(c for c in board["claims"] if c["id"] == "streaming")
        assert claim["status"] == "done" and claim["n_failed"] == 0

    log = tmp_path / "serve.log"
    ends_clean(["serve", "eager", "--serve-model", str(model_dir), "--base-url", url], env, 1,
               signal.SIGKILL, until_healthy=url, log=log, before_signal=the_board)
    assert not is_healthy(url)
    text = log.read_text("utf-8", "replace")
    assert "--load-format" not in text.split("effective command:")[-1].splitlines()[0]


def test_a_path_that_is_not_a_model_directory_is_named(tmp_path: Path) -> None:
    for bad, words in ((tmp_path / "missing", "no such directory"),
                       (tmp_path, "no config.json")):
        out = subprocess.run([sys.executable, "-m", "playground.cli", "serve", "--serve-model",
                              str(bad), "--base-url", f"http://127.0.0.1:{free_port()}/v1"],
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "model" in out.stderr and words in out.stderr


# ---------------------------------------------------------------------------------------------
# LangChain


@pytest.mark.parametrize("stream", [True, False])
def test_langchain_variant_streams_with_the_sdk_clock_rules(keyed_vllm: Keyed, stream: bool
                                                            ) -> None:
    """On the keyed server: vLLM answers 401 unless the key arrives through LangChain."""
    same = dict(stream=stream, thinking=False, temperature=0, max_tokens=16, ignore_eos=True)
    sdk = Variant(name="sdk", client="openai", **same)
    lc = Variant(name="lc", client="langchain", **same)
    recs = [new_recording(v, request.build(v, "Say hi", "Qwen/Qwen3-0.6B"),
                          keyed_vllm.base_url) for v in (sdk, lc)]

    async def go() -> None:
        pool = ClientPool(keyed_vllm.key)
        try:
            await run_to_end(pool, recs, mode="sequential", timeout_s=120)
        finally:
            await pool.aclose()

    asyncio.run(go())
    a, b = recs
    for rec in recs:
        assert rec.error is None and rec.status == "done", rec.error
        m = rec.metrics()
        assert m.completion_tokens == 16  # usage from the server, not counted chunks
        # same clock: the call, then the hand-off to the transport, then the answer
        assert rec.raw.t_call is not None and rec.raw.t_send is not None
        assert rec.raw.t_call <= rec.raw.t_send <= rec.raw.t_last  # type: ignore[operator]
        assert m.pre_send_ms is not None and m.pre_send_ms >= 0
    assert b.client == "langchain" and a.client == "openai"
    assert b.request.body() == a.request.body()  # the same request, byte for byte
    if stream:
        # one stamp per token chunk, as LangChain handed them over
        assert len(b.raw.token_times) == len(a.raw.token_times)
        assert b.metrics().ttft_ms is not None and b.raw.t_headers is None
    else:
        assert b.content == a.content and b.metrics().ttft_ms is None


def test_langchain_errors_are_named_like_the_sdks(vllm_server: str) -> None:
    v = Variant(name="lc", client="langchain", stream=True, thinking=False, max_tokens=8)
    bad = new_recording(v, request.build(v, "hi", "no-such-model"), vllm_server)
    down = new_recording(v, request.build(v, "hi", "Qwen/Qwen3-0.6B"),
                         f"http://127.0.0.1:{free_port()}/v1")

    async def go() -> None:
        pool = ClientPool("EMPTY")
        try:
            await run_to_end(pool, [bad, down], mode="concurrent", timeout_s=60)
        finally:
            await pool.aclose()

    asyncio.run(go())
    assert type(bad.error).__name__ == "RequestRejected" and "404" in str(bad.error)
    assert type(down.error).__name__ == "ServerUnavailable"

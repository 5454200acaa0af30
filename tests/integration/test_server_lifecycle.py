"""Managed vLLM servers for real: start / restart / stop, two at once, no orphans, breakdown."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from playground.core import request
from playground.core.metrics import residual_ms
from playground.core.pool import ClientPool
from playground.core.runner import new_recording, run_to_end
from playground.server.http import is_healthy
from playground.server.managed import ManagedServer, cpu_demo_config, free_port
from playground.server.prom import HISTOGRAMS, histogram_delta, scrape
from playground.specs.presets import Variant

pytestmark = pytest.mark.server


def vllm_pids_on(port: int) -> list[int]:
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "vllm" in cmd and f"--port {port} " in cmd + " ":
            pids.append(int(proc.name))
    return pids


def wait_until(cond, timeout_s: float = 60.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.5)
    return cond()


def test_start_restart_stop_and_two_servers_at_once(demo_model_dir: Path, vllm_server: str,
                                                    tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "vllm.log"
    server = ManagedServer(cpu_demo_config(demo_model_dir, port=port, enforce_eager=True,
                                           max_model_len=1024), log)
    try:
        server.start()
        server.wait_ready(timeout_s=600)
        assert is_healthy(server.config.base_url) and is_healthy(vllm_server)  # two at once
        assert "'max_num_seqs': 3" not in log.read_text()
        server.restart(server.config.model_copy(update={"max_num_seqs": 3}), timeout_s=600)
        assert is_healthy(server.config.base_url)
        assert "'max_num_seqs': 3" in log.read_text()  # the new flag took effect
    finally:
        server.stop()
    assert not is_healthy(server.config.base_url)
    assert wait_until(lambda: not vllm_pids_on(port), 30)


def test_killing_the_app_leaves_no_vllm_process(demo_model_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    env = {**os.environ, "PLAYGROUND_CACHE_DIR": str(tmp_path)}
    app = subprocess.Popen([sys.executable, "-m", "playground.cli", "serve", "eager",
                            "--base-url", url, "--serve-model", str(demo_model_dir)],
                           env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        assert wait_until(lambda: is_healthy(url) or app.poll() is not None, 600)
        assert is_healthy(url), app.stderr.read().decode()[-2000:] if app.stderr else ""
        assert vllm_pids_on(port)
        app.send_signal(signal.SIGKILL)  # no cleanup code runs in the app
        app.wait(timeout=30)
        assert wait_until(lambda: not vllm_pids_on(port), 60)
        assert not is_healthy(url)
    finally:
        for pid in vllm_pids_on(port):
            os.kill(pid, signal.SIGKILL)


def test_server_breakdown_adds_up(vllm_server: str) -> None:
    v = Variant(name="b", stream=True, thinking=False, temperature=0, max_tokens=24,
                ignore_eos=True)
    before = scrape(vllm_server)
    recs = [new_recording(v, request.build(v, f"[bd {i}] 你好", "Qwen/Qwen3-0.6B"),
                          vllm_server) for i in range(3)]

    async def go() -> None:
        pool = ClientPool("EMPTY")
        for rec in recs:  # one at a time: no queueing between them
            await run_to_end(pool, [rec])
        await pool.aclose()

    asyncio.run(go())
    after = scrape(vllm_server)
    means = {k: histogram_delta(before, after, name) for k, name in HISTOGRAMS.items()}
    assert means["e2e_ms"].count == 3
    parts = sum(means[k].mean_ms or 0.0 for k in ("queue_ms", "prefill_ms", "decode_ms"))
    e2e = means["e2e_ms"].mean_ms
    assert e2e is not None
    # queue + prefill + decode account for the server's E2E within 5% (stated tolerance)
    assert abs(e2e - parts) / e2e <= 0.05  # accounting, not a speed claim
    # per request, the client waited at least as long as the server's parts: the residual
    # (the same number every view shows) is never negative
    for r in recs:
        rest = residual_ms(r.raw, r.metrics().e2e_ms)
        assert rest is not None and rest >= 0

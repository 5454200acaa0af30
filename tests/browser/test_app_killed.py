"""The app itself killed (SIGKILL) while a Playground run and a benchmark are in flight, or
stopped (SIGTERM) during a Playground run: the run files stay readable, what was measured stays
measured, and nothing the app started keeps running -- its own processes, the managed vLLM it
started from the Server tab (its whole process group, EngineCore included), and the requests on
the real test server."""

from __future__ import annotations

import json
import os
import shutil
import signal
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import expect

from playground.server.managed import free_port
from playground.server.prom import running_requests as running
from tests.apphelp import app, open_page
from tests.browser.test_playground_ui import LONG, pick
from tests.browser.test_reliability_ui import connect
from tests.faultproxy import FaultProxy
from tests.procs import alive, children, descendants, engine_cores, group, wait_for
from tests.serverstate import idle

pytestmark = [pytest.mark.browser, pytest.mark.server]


def lines(folder: Path) -> list[dict]:
    """Every request line of every run file under `folder` (json.loads fails on a torn line;
    the server's series lines that follow a run's requests are left out)."""
    return [r for f in sorted(folder.glob("*.jsonl"))
            for line in f.read_text("utf-8").splitlines()
            if (r := json.loads(line)).get("kind") == "request"]


def app_env(vllm_server: str, tmp_path: Path, model_dir: Path) -> dict[str, str]:
    """The app under test: the test server, no warm-up, its own run and presets folders, and
    the demo model (without saved weights) for the server it manages."""
    model = tmp_path / "model"
    shutil.copytree(model_dir, model, ignore=shutil.ignore_patterns("*.safetensors"))
    return {"PLAYGROUND_BASE_URL": vllm_server, "PLAYGROUND_WARMUP": "off",
            "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"),
            "PLAYGROUND_USER_PRESETS_DIR": str(tmp_path / "u"),
            "PLAYGROUND_SERVE_MODEL": str(model), "PLAYGROUND_CACHE_DIR": str(tmp_path / "c")}


def press_start(page) -> None:  # type: ignore[no-untyped-def]
    """Press Start on the Server tab (a managed vLLM on a free port; it loads while the test
    goes on), then go back to the Playground tab."""
    page.get_by_role("tab", name="Server").click()
    page.get_by_label("port", exact=True).fill(str(free_port()))
    page.get_by_role("button", name="Start", exact=True).click()
    page.get_by_role("tab", name="Playground").click()


def engine_up(app_pid: int) -> tuple[int, list[int]]:
    """Wait until the managed server's EngineCore exists (10-30 s into start-up here); return
    its process group and engine processes.

    The group is then lowered to the lowest CPU priority: it keeps loading, and the kill that
    follows finds it mid-start as before, but on a 2-core box it no longer takes the cores from
    the run or the benchmark the test is timing its kill against."""
    pgid, engines = managed_engines(app_pid)
    os.setpriority(os.PRIO_PGRP, pgid, 19)  # every thread of every process in the group
    return pgid, engines


def managed_engines(app_pid: int) -> tuple[int, list[int]]:
    """The app's managed server: its process group and engine processes, once vLLM's
    EngineCore exists."""
    def engines() -> list[int]:
        return [e for g in children(app_pid) if os.getpgid(g) == g for e in engine_cores(g)]

    assert wait_for(lambda: bool(engines()), timeout=300, step=0.5)
    (pgid,) = {os.getpgid(e) for e in engines()}
    return pgid, engines()


def gone(pgid: int, engines: list[int]) -> bool:
    """The managed server's whole process group has ended, its engine processes included."""
    return wait_for(lambda: not group(pgid) and not alive(engines), timeout=60)


def quiet(base_url: str) -> None:
    assert idle(base_url)


@pytest.mark.reliability(
    case="the app killed (SIGKILL) during a Playground run and a benchmark, in the browser",
    where="both run files (runs/playground, runs/bench): every line readable JSON, the "
    "finished column's request and every finished benchmark request in them; no process of "
    "the app left, its managed vLLM's whole group (EngineCore included) gone; the server's "
    "running requests back to 0", order=42)
def test_app_killed_during_a_playground_run_and_a_benchmark(  # type: ignore[no-untyped-def]
        browser, vllm_server: str, tmp_path: Path, demo_model_dir: Path,
        observed: Callable[[str], None]) -> None:
    """Two visitors of one app: one benchmarking (on the test server), one in a Playground run
    whose streaming column is held in flight by a stalling proxy; then SIGKILL -- no code of
    the app runs after it, so what was final before it is what is kept."""
    quiet(vllm_server)
    runs = tmp_path / "runs"
    stall = FaultProxy(vllm_server).start()
    try:
        with app(env_extra=app_env(vllm_server, tmp_path, demo_model_dir),
                 log=tmp_path / "app.log") as (url, proc):
            bencher, player = open_page(browser, url), open_page(browser, url)
            press_start(bencher)
            bencher.get_by_role("tab", name="Benchmark").click()
            pick(bencher, "experiment (presets/experiments)", "stream-vs-nonstream-fixed")
            bencher.get_by_label("examples (empty = experiment's)").fill("10")
            bencher.get_by_label("repetitions (empty = experiment's)").fill("20")
            connect(player, stall.url("stall"))
            pick(player, "preset 1", "fixed-64-nonstream")
            pick(player, "preset 2", "fixed-64-stream")
            pgid, engines = engine_up(proc.pid)
            player.get_by_role("button", name="Run", exact=True).click()
            expect(player.locator("#answer-1 textarea")).not_to_have_value("", timeout=LONG)
            bencher.get_by_role("button", name="Run benchmark", exact=True).click()
            bench, played = runs / "bench", runs / "playground"
            # column 1 is final when its request is in the run file
            assert wait_for(lambda: played.exists() and len(lines(played)) >= 1, timeout=120)
            assert wait_for(lambda: bench.exists() and sum(
                r.get("kind") == "request" for r in lines(bench)) >= 4, timeout=300, step=0.2)
            kids = descendants(proc.pid)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=60)
    finally:
        stall.stop()
    text = [line for f in bench.glob("*.jsonl") for line in f.read_text().splitlines()]
    done = [r for r in map(json.loads, text) if r.get("kind") == "request"]  # all valid JSON
    rows = lines(played)
    left = wait_for(lambda: not alive(kids), timeout=30)
    server_gone = gone(pgid, engines)
    quiet(vllm_server)
    got = [(r["status"], r["metrics"]["completion_tokens"]) for r in rows]
    observed(f"playground run file rows (status, tokens) {got}; benchmark: {len(text)} lines, "
             f"all valid JSON, {len(done)} finished requests kept (of 400 planned); app "
             f"processes left: {len(alive(kids))}; its managed vLLM's group (EngineCore "
             f"included) left: {len(group(pgid))}; running on the server: "
             f"{running(vllm_server):.0f}")
    assert left and server_gone
    assert got == [("done", 64)]  # the held streaming column was never final: not kept
    assert 4 <= len(done) < 400 and all(r["metrics"]["completion_tokens"] == 64 for r in done)


@pytest.mark.reliability(
    case="the app stopped (SIGTERM) during a Playground run, in the browser", where="the run "
    "file keeps both columns: the finished one, and the one in flight as cancelled with its "
    "partial text; nothing left running (its managed vLLM's group, EngineCore included, gone)",
    order=44)
def test_app_stopped_during_a_playground_run(browser, vllm_server: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                            demo_model_dir: Path,
                                            observed: Callable[[str], None]) -> None:
    quiet(vllm_server)
    runs = tmp_path / "runs"
    # The app talks to the server through a proxy that stalls streams after three events: the
    # streaming column is in flight, with partial text, for as long as the test needs (a long
    # generation could finish first on a fast box); the non-streaming one finishes.
    stall = FaultProxy(vllm_server).start()
    env = {**app_env(vllm_server, tmp_path, demo_model_dir),
           "PLAYGROUND_BASE_URL": stall.url("stall")}
    try:
        with app(env_extra=env, log=tmp_path / "app.log") as (url, proc):
            page = open_page(browser, url)
            press_start(page)
            pick(page, "preset 1", "fixed-64-nonstream")
            pick(page, "preset 2", "fixed-64-stream")
            pgid, engines = engine_up(proc.pid)
            page.get_by_role("button", name="Run", exact=True).click()
            expect(page.locator("#answer-1 textarea")).not_to_have_value("", timeout=LONG)
            # column 1 is final when its request is in the run file
            assert wait_for(lambda: len(lines(runs / "playground")) >= 1 if
                            (runs / "playground").exists() else False, timeout=120)
            kids = descendants(proc.pid)
            os.kill(proc.pid, signal.SIGTERM)
            proc.wait(timeout=60)
    finally:
        stall.stop()
    rows = lines(runs / "playground")
    left = wait_for(lambda: not alive(kids), timeout=30)
    server_gone = gone(pgid, engines)
    quiet(vllm_server)
    got = [(r["status"], r["metrics"]["completion_tokens"], len(r["content"])) for r in rows]
    observed(f"SIGTERM: run file rows (status, tokens, chars) {got}; app processes left: "
             f"{len(alive(kids))}; its managed vLLM's group (EngineCore included) left: "
             f"{len(group(pgid))}; running on the server: {running(vllm_server):.0f}")
    assert left and server_gone
    assert ("done", 64) in [(s, n) for s, n, _ in got]
    # the one in flight is kept too, as cancelled
    assert len(got) == 2 and any(s == "cancelled" and c > 0 for s, _, c in got)

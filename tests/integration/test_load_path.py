"""The load path against the real CPU server: the same bodies, the same readings, faults named
like the SDK path names them, and the hand-off to vllm bench serve (docs/load.md); several
readers, every request accounted for: test_ray_readers. No durations are asserted."""

from __future__ import annotations

import asyncio
import json
import math
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from playground.core import request
from playground.core.pool import ClientPool
from playground.core.runner import Recording, new_recording, run_many
from playground.lab.sweep import read_rows
from playground.server.http import server_info
from playground.specs.presets import Variant
from tests.conftest import Keyed
from tests.faultproxy import FaultProxy, serving


@pytest.fixture(scope="module")
def proxy(vllm_server: str) -> Iterator[FaultProxy]:
    yield from serving(vllm_server)


@pytest.fixture(scope="module")
def model(vllm_server: str) -> str:
    return server_info(vllm_server, None).models[0].id


def fixed(client: str, n: int = 12) -> Variant:
    return Variant(name=f"load-{client}", stream=True, temperature=0.0, max_tokens=n,
                   ignore_eos=True, client=client)  # type: ignore[arg-type]


def run_one(rec: Recording, **timeouts: float) -> None:
    async def go() -> None:
        pool = ClientPool("EMPTY", **timeouts)
        try:
            await run_many(pool, [rec])
        finally:
            await pool.aclose()

    asyncio.run(go())


def chat_bodies(proxy: FaultProxy, fault: str) -> list[dict]:
    return [json.loads(s["body"]) for s in proxy.seen
            if s["fault"] == fault and s["path"].endswith("chat/completions")]


def test_raw_reader_and_sdk_send_the_body_view_code_shows_and_read_the_same_stream(
        proxy: FaultProxy, model: str) -> None:
    recs = {}
    for client in ("openai", "raw"):
        v = fixed(client)
        req = request.build(v, "Name three rivers.", model)
        rec = new_recording(v, req, proxy.url(f"ok-body-{client}"))
        run_one(rec)
        assert rec.error is None and rec.client == client
        sent = chat_bodies(proxy, f"ok-body-{client}")
        assert len(sent) == 1
        # what went over the wire is the pure function's body, and the curl snippet's
        curl = request.curl_snippet(req, proxy.url("ok"))
        assert sent[0] == req.body() == json.loads(curl.split("-d '", 1)[1].rstrip("'"))
        recs[client] = rec
    sdk, raw = recs["openai"], recs["raw"]
    # temperature 0, the same prompt: the same text, chunk for chunk, read by either reader
    assert raw.content == sdk.content and raw.content
    assert len(raw.raw.token_times) == len(sdk.raw.token_times) > 1
    for r in (sdk, raw):
        m = r.metrics()  # one derivation (core/metrics) whoever read the stream
        assert m.completion_tokens == 12 and r.raw.finish_reason == "length"
        assert m.ttft_ms is not None and m.tpot_ms is not None
        assert len(m.itl_ms) == len(r.raw.token_times) - 1
        assert r.raw.server_metrics and "time_to_first_token_ms" in r.raw.server_metrics


FAULTS = [  # the SDK path's wording (test_reliability), which the raw reader must match
    ("kill", "StreamError", "stream broke after it started", True),
    ("malformed", "StreamError", "not JSON", True),
    ("error-event", "StreamError", "stream failed after it started", True),
    ("500", "RequestRejected", "HTTP 500", False),
]


@pytest.mark.parametrize(("fault", "kind", "words", "partial"), FAULTS)
def test_raw_reader_names_each_fault_like_the_sdk(proxy: FaultProxy, model: str, fault: str,
                                                  kind: str, words: str, partial: bool) -> None:
    got = {}
    for client in ("openai", "raw"):
        v = fixed(client, 32)
        rec = new_recording(v, request.build(v, f"[{fault} {client}] Go on.", model),
                            proxy.url(fault))
        run_one(rec)
        assert rec.status == "error" and type(rec.error).__name__ == kind, rec.error
        assert words in str(rec.error)
        assert bool(rec.content) == partial  # what arrived before the fault is kept
        got[client] = rec
    assert type(got["raw"].error) is type(got["openai"].error)


def test_raw_reader_names_a_stall(proxy: FaultProxy, model: str) -> None:
    v = fixed("raw", 32)
    rec = new_recording(v, request.build(v, "[stall raw] Go on.", model), proxy.url("stall"))
    run_one(rec, read_timeout_s=2)
    assert type(rec.error).__name__ == "RequestTimeout" and "stalled" in str(rec.error)
    assert rec.content


def test_sweep_hands_a_level_to_vllm_bench_with_the_key_kept_off_its_command_line(
        keyed_vllm: Keyed, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYGROUND_")}
    out = tmp_path / "sweep"
    run = subprocess.run(
        [sys.executable, "-m", "playground.cli", "sweep", "--base-url", keyed_vllm.base_url,
         "--concurrency", "2", "--engine", "vllm-bench", "--output-len", "6",
         "--num-prompts", "4", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
        env={**env, "PLAYGROUND_API_KEY": keyed_vllm.key})
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads((out / "sweep.json").read_text("utf-8"))
    (level,) = doc["levels"]
    # the key reached the server through the engine: vLLM checks it (--api-key) and would
    # have answered every request 401
    assert level["engine"] == "vllm-bench" and level["n"] == 4 and level["failed"] == 0
    rows = read_rows(out / "sweep-requests.csv")
    assert [r["tool"] for r in rows] == ["vllm-bench"] * 4
    for r in rows:  # vllm bench's rows on our definitions: n - 1 gaps, TPOT from them
        assert r["output_tokens"] == 6 and len(r["itl"]) == 5
        # (the CSV keeps microseconds: each number is off by up to 0.0005 ms)
        assert r["tpot"] == pytest.approx(sum(r["itl"]) / 5, rel=1e-3, abs=1e-3)
    # ... and is in none of the files or output
    texts = [run.stdout, run.stderr] + [p.read_text("utf-8", "replace")
                                        for p in out.rglob("*") if p.is_file()]
    assert not any(keyed_vllm.key in t for t in texts)


def test_sweep_refuses_bad_levels_before_sending_anything(proxy: FaultProxy,
                                                         tmp_path: Path) -> None:
    before = len(proxy.seen)
    run = subprocess.run([sys.executable, "-m", "playground.cli", "sweep", "--base-url",
                          proxy.url("ok"), "--concurrency", "8,zero", "--out",
                          str(tmp_path / "x")], capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and re.search(r"--concurrency.*1 to 4096", run.stderr)
    assert "Traceback" not in run.stderr and len(proxy.seen) == before


@pytest.mark.parametrize(("kind", "per_s", "burstiness"), [
    ("poisson", 5.0, 1.0), ("gamma", 20.0, 0.3), ("constant", 8.0, math.inf)])
def test_the_arrival_schedule_is_vllm_bench_serves(kind: str, per_s: float, burstiness: float,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """lab/arrivals against vLLM's own generator (benchmarks/serve.get_request, the installed
    vLLM), seeded alike: its sleeps, replayed on a scripted clock, give the same due times."""
    import types

    import numpy as np
    from vllm.benchmarks import serve

    from playground.lab.arrivals import Rate, schedule

    now = [1000.0]

    async def sleep(s: float) -> None:
        now[0] += s

    monkeypatch.setattr(serve, "time", types.SimpleNamespace(time=lambda: now[0]))
    monkeypatch.setattr(serve.asyncio, "sleep", sleep)
    n, due = 40, []

    async def theirs() -> None:
        reqs = [types.SimpleNamespace(timestamp=None) for _ in range(n)]
        async for _ in serve.get_request(reqs, per_s, burstiness):  # type: ignore[arg-type]
            due.append(now[0] - 1000.0)

    np.random.seed(7)
    asyncio.run(theirs())
    rate = Rate(kind=kind, per_s=per_s,  # type: ignore[arg-type]
                burstiness=1.0 if kind != "gamma" else burstiness)
    assert schedule(rate, n, seed=7) == pytest.approx(due, abs=1e-9)


def test_an_open_loop_run_sends_on_schedule_and_never_more_than_its_cap(
        vllm_server: str, model: str) -> None:
    """runner.run_at: each request stamped with when it was due; with --max-concurrency the
    later ones wait to be sent, and that wait is theirs (send delay), not a later schedule."""
    from playground.core.runner import run_at

    v = fixed("raw", 8)
    capped = [new_recording(v, request.build(v, f"open loop {i}", model), vllm_server)
              for i in range(6)]
    free = [new_recording(v, request.build(v, f"open loop free {i}", model), vllm_server)
            for i in range(4)]

    async def go() -> tuple[float, float]:
        pool = ClientPool("EMPTY")
        try:
            a = await run_at(pool, capped, [0.0] * 6, max_concurrency=2)
            b = await run_at(pool, free, [0.0, 0.05, 0.1, 0.15])
            return a, b
        finally:
            await pool.aclose()

    starts = asyncio.run(go())
    for recs, start, due in ((capped, starts[0], [0.0] * 6),
                             (free, starts[1], [0.0, 0.05, 0.1, 0.15])):
        assert all(r.status == "done" and r.error is None for r in recs)
        assert [r.raw.t_due for r in recs] == pytest.approx([start + d for d in due])
        for r in recs:
            m = r.metrics()
            assert r.raw.t_send >= r.raw.t_due and m.send_delay_ms >= 0
            assert m.ttft_from_due_ms == pytest.approx(m.ttft_ms + m.send_delay_ms)
    for r in capped:  # at most 2 in flight whenever one was sent
        in_flight = [o for o in capped if o.raw.t_send <= r.raw.t_send < o.raw.t_last]
        assert len(in_flight) <= 2
    assert sum(r.raw.t_send >= min(o.raw.t_last for o in capped) for r in capped) >= 4


def test_a_rate_sweep_records_each_requests_send_delay(vllm_server: str, tmp_path: Path
                                                       ) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYGROUND_")}
    out = tmp_path / "rates"
    run = subprocess.run(
        [sys.executable, "-m", "playground.cli", "sweep", "--base-url", vllm_server,
         "--rate", "8,inf", "--num-prompts", "6", "--output-len", "4",
         "--max-concurrency", "3", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads((out / "sweep.json").read_text("utf-8"))
    assert [lv["rate_per_s"] for lv in doc["levels"]] == [8.0, "inf"]
    assert doc["arrival"] == "poisson" and doc["max_concurrency"] == 3
    for lv in doc["levels"]:
        assert lv["n"] == 6 and lv["failed"] == 0
        assert lv["send_delay_p50_ms"] is not None and lv["send_delay_p50_ms"] >= 0
        assert lv["ttft_from_due_p50_ms"] >= lv["ttft_p50_ms"]
        assert isinstance(lv["client_bound"], bool)
    rows = read_rows(out / "sweep-requests.csv")
    assert [r["rate"] for r in rows] == [8.0] * 6 + [math.inf] * 6
    assert all(r["send_delay"] is not None and r["send_delay"] >= 0 for r in rows)
    assert "send delay" in run.stdout
    # what the server was doing, beside each level: typed samples, tagged, and their summary
    samples = [json.loads(x) for x in (out / "server-series.jsonl").read_text().splitlines()]
    assert {s["level"] for s in samples} == {"rate 8", "rate inf"}
    assert all(s["kind"] == "server-sample" and s["running"] >= 0 for s in samples)
    for lv in doc["levels"]:
        assert lv["server"]["samples"] >= 1 and lv["server"]["gaps"] == 0
        assert lv["server"]["peak_running"] >= 0 and lv["server"]["preemptions"] >= 0
    # the report: the Pareto view of these levels, labelled by rate, and their table
    page = (out / "sweep.html").read_text("utf-8")
    assert "Throughput against latency" in page and "8 req/s</td>" in page
    assert '"text":["8 req\\u002fs","inf req\\u002fs"]' in page  # the points' labels
    assert "TTFT p50" in page and "send delay p50 / p99 ms" in page
    # ... and the server's series, level after level, beside each level's TTFT
    assert 'id="server-series"' in page and "No sample of the server" not in page
    assert "what the server was doing (bottom)" in page and '"name":"waiting (server)"' in page


def test_a_failed_scrape_is_a_gap_in_the_series_not_a_failed_sweep(vllm_server: str,
                                                                    tmp_path: Path) -> None:
    flaky = FaultProxy(vllm_server).start()  # its first 3 /metrics requests are dropped
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLAYGROUND_")}
    try:
        run = subprocess.run(
            [sys.executable, "-m", "playground.cli", "sweep", "--base-url",
             flaky.url("flaky-metrics"), "--rate", "4", "--num-prompts", "6", "--output-len",
             "4", "--out", str(tmp_path / "o"), "--series-interval", "0.25"],  # 4 ticks/s
            capture_output=True, text=True, timeout=600, env=env)
    finally:
        flaky.stop()
    assert run.returncode == 0, run.stderr[-3000:]
    (level,) = json.loads((tmp_path / "o" / "sweep.json").read_text("utf-8"))["levels"]
    assert level["failed"] == 0 and level["server"]["gaps"] == 3
    assert level["server"]["samples"] >= 1  # the scrapes after the dropped ones


@pytest.mark.parametrize(("args", "named"), [
    (["--rate", "5,fast"], r"--rate: 'fast' is not a rate"),
    (["--rate", "5", "--burstiness", "2"], r"--burstiness: 2: .*--arrival gamma"),
    (["--rate", "5", "--max-concurrency", "0"], r"--max-concurrency: must be at least 1")])
def test_a_rate_sweep_refuses_bad_input_before_sending_anything(
        proxy: FaultProxy, tmp_path: Path, args: list[str], named: str) -> None:
    before = len(proxy.seen)
    run = subprocess.run([sys.executable, "-m", "playground.cli", "sweep", "--base-url",
                          proxy.url("ok"), *args, "--out", str(tmp_path / "x")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode != 0 and re.search(named, run.stderr), run.stderr[-2000:]
    assert "Traceback" not in run.stderr and len(proxy.seen) == before

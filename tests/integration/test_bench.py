"""Benchmarks end to end against the real server: files agree; a killed run keeps its lines."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from playground.lab.store import read_run
from playground.server.gpu import NO_GPU

pytestmark = pytest.mark.server

SMALL = """\
name: small
variants:
  - fixed-64-nonstream
  - name: short-stream
    stream: true
    max_tokens: 16
    ignore_eos: true
    temperature: 0
    prompt: minimal
  - all-optimizations
baseline: fixed-64-nonstream
examples: 3
repetitions: 1
warmup: 1
"""


def bench(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "playground.cli", "bench", *args],
                          capture_output=True, text=True, timeout=600, env=env)


def test_bench_writes_consistent_files(vllm_server: str, tmp_path: Path) -> None:
    (tmp_path / "small.yaml").write_text(SMALL)
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    out = bench([str(tmp_path / "small.yaml"), "--base-url", vllm_server, "--out",
                 str(tmp_path / "out")], env)
    assert out.returncode == 0, out.stderr
    assert "3/12" in out.stderr or "12/12" in out.stderr  # progress
    with (tmp_path / "out" / "requests.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 9  # 3 variants x 3 examples (warm-up excluded)
    result = json.loads((tmp_path / "out" / "results.json").read_text())
    assert len(result["requests"]) == 9
    # the published format, read back typed (docs/schemas/results.schema.json)
    from playground.core.results import RESULTS_FORMAT, load_results
    typed = load_results(tmp_path / "out" / "results.json")
    assert result["format"] == RESULTS_FORMAT and typed.summary.n_requests == 9
    assert typed.summary.server is not None and typed.summary.server.samples >= 1
    for name, v in result["summary"]["variants"].items():
        assert v["n"] == 3 and v["failed"] == 0, name
        m = v["metrics"]["e2e_ms"]
        lo, hi = m["median_ci"]
        assert lo <= m["p50"] <= hi
    opt = result["summary"]["variants"]["all-optimizations"]
    assert opt["json_valid_pct"] == 100 and opt["schema_valid_pct"] == 100
    assert opt["field_exact_pct"] is not None
    assert "first visible character" in out.stdout
    html = (tmp_path / "out" / "report.html").read_text()
    assert "Plotly" in html and "OFFLINE DEMO MODEL" in html
    runs = list((tmp_path / "runs" / "bench").glob("*.jsonl"))
    assert len(runs) == 1
    kinds = [json.loads(line)["kind"] for line in runs[0].read_text().splitlines()]
    run = read_run(runs[0])  # typed: every line loads
    assert len(run.requests) == 12 and run.background is not None
    # meta first, every request (warm-up included), the background-load summary, then the
    # server's /metrics series over the timed trials (one sample at their start, at least),
    # and the series' own line: on this machine, no GPU, and it says so
    n_samples = len(run.server)
    assert kinds == (["meta"] + ["request"] * 12 + ["background"]
                     + ["server-sample"] * n_samples + ["server-series"])
    assert n_samples >= 1 and all(s.running >= 0 and s.kv_usage is not None
                                  for s in run.server)
    assert run.series_info is not None and run.series_info.gpu_note == NO_GPU and not run.gpu
    said = result["summary"]["server"]["text"]
    assert said.startswith("peak ") and said.endswith(NO_GPU)
    assert f"the server meanwhile: {said}" in out.stdout and said in html
    assert "what the server was doing (bottom)" in html  # drawn on the requests' time axis
    assert "rows on another clock" not in html  # every request on the samples' clock
    # listed and comparable from the CLI
    listed = subprocess.run([sys.executable, "-m", "playground.cli", "runs", "list"],
                            capture_output=True, text=True, env=env, timeout=60)
    assert str(runs[0]) in listed.stdout
    cmp = subprocess.run([sys.executable, "-m", "playground.cli", "runs", "compare",
                          str(runs[0]), str(runs[0])], capture_output=True, text=True,
                         env=env, timeout=60)
    assert cmp.returncode == 0 and cmp.stdout.count("all-optimizations") >= 2


def test_failed_requests_give_a_nonzero_exit_with_a_count(vllm_server: str,
                                                          tmp_path: Path) -> None:
    (tmp_path / "bad.yaml").write_text(
        "name: bad\nvariants:\n  - {name: too-long, max_tokens: 50000}\n"
        "examples: 2\nwarmup: 0\n")
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    out = bench([str(tmp_path / "bad.yaml"), "--base-url", vllm_server, "--out",
                 str(tmp_path / "o")], env)
    assert out.returncode == 1
    assert "2 timed request(s) failed" in out.stderr


@pytest.mark.reliability(case="the bench CLI killed (SIGKILL) during a benchmark",
                         where="the run's JSONL: every line readable, every finished request "
                         "in it", order=41)
def test_killed_benchmark_leaves_a_readable_jsonl(vllm_server: str, tmp_path: Path,
                                                  observed) -> None:
    (tmp_path / "long.yaml").write_text(
        "name: long\nvariants: [fixed-64-stream]\nrepetitions: 20\nexamples: 5\nwarmup: 0\n")
    runs = tmp_path / "runs"
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(runs)}
    proc = subprocess.Popen([sys.executable, "-m", "playground.cli", "bench",
                             str(tmp_path / "long.yaml"), "--base-url", vllm_server],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    path = None
    while time.monotonic() < deadline:
        files = list((runs / "bench").glob("*.jsonl")) if (runs / "bench").exists() else []
        if files and len(files[0].read_text().splitlines()) >= 4:
            path = files[0]
            break
        time.sleep(0.2)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert path is not None
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line is complete JSON
    requests = [r for r in records if r["kind"] == "request"]
    assert 3 <= len(requests) < 100
    observed(f"{len(lines)} lines, all valid JSON; {len(requests)} finished requests kept")
    assert all(r["metrics"]["completion_tokens"] == 64 for r in requests)


RATED = """\
name: rated
variants:
  - {name: probe, stream: true, max_tokens: 8, ignore_eos: true, temperature: 0,
     prompt: minimal}
examples: 6
warmup: 0
rate: {kind: gamma, per_s: 20, burstiness: 0.5}
background: 2
background_rate: {kind: constant, per_s: 5}
background_engine: playground
seed: 3
"""


def test_an_open_loop_experiment_sends_on_vllm_benchs_schedule_beside_a_rated_background(
        vllm_server: str, tmp_path: Path) -> None:
    from playground.lab.arrivals import Rate, schedule

    (tmp_path / "rated.yaml").write_text(RATED)
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    out = bench([str(tmp_path / "rated.yaml"), "--base-url", vllm_server, "--out",
                 str(tmp_path / "out")], env)
    assert out.returncode == 0, out.stderr
    (path,) = (tmp_path / "runs" / "bench").glob("*.jsonl")
    run = read_run(path)
    timed = [r for r in run.requests if r.phase == "timed"]
    assert len(timed) == 6 and all(r.error is None for r in timed)
    # each request was due when the seeded gamma schedule says (vllm bench's definitions),
    # and carries the client's own delay in sending it
    due = sorted(r.raw.t_due for r in timed if r.raw.t_due is not None)
    want = schedule(Rate(kind="gamma", per_s=20, burstiness=0.5), 6, seed=3)
    assert len(due) == 6
    assert [round(t - due[0], 6) for t in due] == [round(t - want[0], 6) for t in want]
    assert all(r.metrics.send_delay_ms is not None and r.metrics.send_delay_ms >= 0
               for r in timed)
    assert run.background is not None and run.background.rate == "constant 5/s"
    assert "arriving at constant 5/s (at most 2 in flight)" in out.stdout

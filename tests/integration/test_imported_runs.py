"""Another tool's run, read in and judged like our own: `vllm bench serve` (the vLLM this suite
installs) writes its detailed result against the real test server; `playground runs import`
turns it into typed records on our definitions, and `playground runs compare` gives the same
calibrated verdicts for it as for a benchmark of ours."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from playground.lab.engine import BenchServe, rows_of_result, write_prompts
from playground.lab.store import read_run
from playground.server.http import server_info


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "playground.cli", *args], capture_output=True,
                          text=True, env=env, timeout=600)


def test_a_vllm_bench_result_is_imported_and_compared_like_our_own(vllm_server: str,
                                                                   tmp_path: Path) -> None:
    info = server_info(vllm_server, "EMPTY")
    model = info.models[0]
    prompts = [f"request {i}: say something about latency" for i in range(12)]
    spec = BenchServe(vllm_server, model.id, model.root or model.id, concurrency=2,
                      dataset=write_prompts(tmp_path / "prompts.jsonl", prompts),
                      num_prompts=len(prompts), output_len=16, result_dir=tmp_path / "vb")
    with (tmp_path / "vllm-bench.log").open("wb") as log:
        rc = subprocess.run(spec.command(sys.executable), stdout=log, stderr=subprocess.STDOUT,
                            timeout=600).returncode
    assert rc == 0, (tmp_path / "vllm-bench.log").read_text()[-3000:]
    result = tmp_path / "vb" / "result.json"
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}

    out = cli("runs", "import", str(result), "--label", "vllm-bench", env=env)
    assert out.returncode == 0, out.stderr
    assert "imported 12 requests (0 failed) from vllm bench serve" in out.stdout
    (path,) = (tmp_path / "runs" / "imported").glob("*.jsonl")
    run = read_run(path)
    assert run.meta.model_extra is not None and run.meta.model_extra["tool"] == "vllm bench serve"
    # every request on our definitions: the load path's alignment of the same file, row by row
    rows = rows_of_result(json.loads(result.read_text()))
    assert len(run.timed) == 12 and all(r.name == "vllm-bench" for r in run.timed)
    for rec, row in zip(run.timed, rows, strict=True):
        m = rec.metrics
        assert m.ttft_ms is not None and abs(m.ttft_ms - row["ttft"]) < 1e-6
        assert m.e2e_ms is not None and abs(m.e2e_ms - row["e2e"]) < 1e-6
        assert m.completion_tokens == 16 and m.tpot_ms is not None
        assert m.first_chunk_ms is not None and m.first_chunk_ms <= m.ttft_ms  # its own TTFT

    # listed, and judged against a run of ours with the claims board's test and intervals
    listed = cli("runs", "list", "--kind", "imported", env=env)
    assert str(path) in listed.stdout
    (tmp_path / "ours.yaml").write_text(
        "name: ours\nvariants: [fixed-64-stream]\nexamples: 6\nrepetitions: 2\nwarmup: 1\n")
    ours = cli("bench", str(tmp_path / "ours.yaml"), "--base-url", vllm_server, "--out",
               str(tmp_path / "out"), env=env)
    assert ours.returncode == 0, ours.stderr
    (mine,) = (tmp_path / "runs" / "bench").glob("*.jsonl")
    cmp = cli("runs", "compare", str(path), str(mine), env=env)
    assert cmp.returncode == 0, cmp.stderr
    verdicts = cmp.stdout[cmp.stdout.index("A: vllm bench serve"):]
    assert "vs B: qwen-latency-lab" in verdicts and "vllm-bench vs fixed-64-stream" in verdicts
    assert "TTFT moved from its role chunk to the first token" in verdicts
    for label in ("TTFT", "TPOT", "E2E"):  # each with its interval and a call
        line = next(x for x in verdicts.splitlines() if x.strip().startswith(f"- {label} p50"))
        assert "[95% CI" in line and ("no detectable difference" in line
                                      or "B is lower" in line or "B is higher" in line), line
    # E2E: 16 tokens against 64 -- a difference this run resolves
    assert "B is higher" in next(x for x in verdicts.splitlines() if "- E2E p50" in x)
    same = cli("runs", "compare", str(path), str(path), env=env)
    assert same.stdout.count("no detectable difference") == 3  # a run against itself


def test_a_file_that_is_not_a_vllm_bench_result_is_named(tmp_path: Path) -> None:
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    (tmp_path / "summary-only.json").write_text(json.dumps({"ttfts": [0.1], "itls": [[]]}))
    out = cli("runs", "import", str(tmp_path / "summary-only.json"), env=env)
    assert out.returncode == 2 and "output_lens" in out.stderr and "--save-detailed" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "runs").exists()

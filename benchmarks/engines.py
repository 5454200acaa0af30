"""Seed 004's ladder end to end, and the two seed-system claims, on two real servers.

    python benchmarks/engines.py OUT --model DIR [--vllm-preset recommended]
        [--examples 10] [--repetitions 2] [--warmup 2] [--concurrency 10] [--budget-s 560]

One Transformers server (the `transformers` server preset: `transformers serve` defaults) and
one vLLM server (`--vllm-preset`), both managed by the project's lifecycle, serve the same model
directory (the demo model gets saved random weights first, so both engines load the same file).
Then, in one run:

1. the ladder (presets/ladders/seed-004.yaml), each step alone on its server, as in the
   article: `--concurrency` requests at a time, P50 / P95 of E2E, accuracy (field match with the
   data set's gold answers), JSON validity, error rate and the server's memory:
   A Transformers, long prompt, free generation; B vLLM; C + short prompt; D + guided JSON;
2. one played pass of the ladder as the Playground plays it, saved as a ladder recording
   (the Playground's replay list shows it);
3. the claims "vLLM is 2.5x faster than Transformers" and "the plain openai SDK is faster than
   LangChain" through `playground claims`, pointed at these two servers.

Writes OUT/ladder/step-*.jsonl (every request, raw), OUT/ladder/ladder.json (the table, read
from those files), OUT/ladder/recording.json, OUT/claims-engines/ (the board and its runs) and
OUT/logs/. `benchmarks/ladder_report.py OUT/ladder` renders the table again from the raw files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import ladder_report  # noqa: E402  (benchmarks/ladder_report.py)

from playground.core.compare import prepare  # noqa: E402
from playground.core.pool import ClientPool  # noqa: E402
from playground.core.record import RequestRecord  # noqa: E402
from playground.core.runner import run_to_end  # noqa: E402
from playground.errors import PlaygroundError  # noqa: E402
from playground.lab import ladder as lad  # noqa: E402
from playground.lab.bench import run_experiment  # noqa: E402
from playground.lab.replay import from_history, save  # noqa: E402
from playground.lab.store import RunFile  # noqa: E402
from playground.server.embedded import preset_config  # noqa: E402
from playground.server.managed import ManagedServer, free_port  # noqa: E402
from playground.server.presets import load_server_presets  # noqa: E402
from playground.settings import Settings  # noqa: E402
from playground.specs.experiments import Experiment, load_dataset  # noqa: E402
from playground.specs.ladders import load_ladder  # noqa: E402
from playground.specs.presets import Variant  # noqa: E402

PRESETS = ROOT / "presets"
MODEL_NAME = "Qwen/Qwen3-0.6B"


def group_pids(pgid: int) -> list[int]:
    out = subprocess.run(["ps", "-o", "pid=", "-g", str(pgid)], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def memory(server: ManagedServer) -> dict[str, Any]:
    """What the server's processes hold: GPU memory (nvidia-smi, per process) and resident
    memory (ps), summed over its process group."""
    if server.proc is None:
        return {}
    pids = group_pids(server.proc.pid)
    rss = subprocess.run(["ps", "-o", "rss=", "-p", ",".join(map(str, pids))],
                         capture_output=True, text=True).stdout.split()
    found: dict[str, Any] = {"rss_mib": round(sum(int(x) for x in rss) / 1024, 1),
                             "pids": pids}
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                            "--format=csv,noheader,nounits"], capture_output=True, text=True)
        gpu = 0
        for line in q.stdout.splitlines():
            pid, _, used = line.partition(",")
            if pid.strip().isdigit() and int(pid) in pids:
                gpu += int(used.strip() or 0)
        found["gpu_mib"] = gpu
    return found


def start(config: Any, log: Path) -> tuple[ManagedServer, float]:
    server = ManagedServer(config, log, python=sys.executable)
    t0 = time.time()
    server.start()
    server.wait_ready(timeout_s=600)
    return server, round(time.time() - t0, 1)


async def run_step(settings: Settings, v: Variant, a: argparse.Namespace, path: Path) -> None:
    exp = Experiment(name=f"ladder-{v.name}", variants=[v], baseline=v.name, dataset="address",
                     examples=a.examples, repetitions=a.repetitions, warmup=a.warmup,
                     concurrency=a.concurrency)
    async for _ in run_experiment(settings, exp, run_file=RunFile(path)):
        pass


async def play_once(settings: Settings, steps: list[Variant | str], prompt: str
                    ) -> tuple[list[RequestRecord], list[Any]]:
    """The ladder as the Playground plays it: the same checks, one step after another."""
    runnable = [s for s in steps if isinstance(s, Variant)]
    checked = await prepare(settings.base_url, "EMPTY", MODEL_NAME, runnable, prompt)
    recs = checked.recordings
    pool = ClientPool("EMPTY")
    try:
        await run_to_end(pool, recs, mode="sequential", timeout_s=settings.timeout_s)
    finally:
        await pool.aclose()
    return [RequestRecord.of(r) for r in recs], lad.fill(steps, recs)


def claim_presets(out: Path, tf_url: str, vllm_url: str) -> Path:
    """A copy of presets/ whose engine claim points at the two running servers (the same
    experiment; the servers are started once for the whole run instead of per claim)."""
    dst = out / "presets"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(PRESETS, dst)
    path = dst / "claims" / "engine.yaml"
    text = path.read_text("utf-8")
    text = text.replace("server: transformers,", f"base_url: '{tf_url}', engine: transformers,")
    text = re.sub(r"server: [a-z0-9-]+,", f"base_url: '{vllm_url}',", text)
    path.write_text(text, "utf-8")
    return dst


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--model", required=True, help="model directory (the demo model's, or any)")
    ap.add_argument("--vllm-preset", default="recommended")
    ap.add_argument("--examples", type=int, default=10)
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--budget-s", type=float, default=560.0,
                    help="leave out what would not finish within this many seconds")
    ap.add_argument("--server-note", default="")
    ap.add_argument("--transformers-pythonpath", default="",
                    help="PYTHONPATH for the Transformers server only (another transformers "
                    "release than the one next to vLLM)")
    ap.add_argument("--claims-only", action="store_true",
                    help="only the two claims (a second run when the ladder took the budget)")
    a = ap.parse_args()
    t_start = time.time()
    out = Path(a.out)
    (out / "ladder").mkdir(parents=True, exist_ok=True)
    # generous timeouts: a Transformers request at concurrency 10 waits minutes, and a
    # timeout would count as an error of the engine instead of a slow answer
    settings = Settings(presets_dir=PRESETS, cache_dir=out / "cache", runs_dir=out / "runs",
                        model=MODEL_NAME, timeout_s=900, read_timeout_s=900)
    presets, errors = load_server_presets(PRESETS)
    assert not errors, errors
    tf_cfg = preset_config(settings, free_port(), presets["transformers"], a.model)[0]
    if a.transformers_pythonpath:
        tf_cfg = tf_cfg.model_copy(update={"extra_env": {"PYTHONPATH":
                                                         a.transformers_pythonpath}})
    vllm_cfg = preset_config(settings, free_port(), presets[a.vllm_preset], a.model)[0]
    info: dict[str, Any] = {"model": a.model, "vllm_preset": a.vllm_preset,
                            "examples": a.examples, "repetitions": a.repetitions,
                            "warmup": a.warmup, "concurrency": a.concurrency, "steps": {}}
    servers: list[ManagedServer] = []
    tf: ManagedServer | None = None
    try:
        try:
            tf, info["transformers_start_s"] = start(tf_cfg, out / "logs" / "transformers.log")
            servers.append(tf)
        except PlaygroundError as e:  # the vLLM steps and the SDK claim still run
            info["transformers_error"] = str(e)
            print(f"Transformers did not start: {e}", flush=True)
        vllm, info["vllm_start_s"] = start(vllm_cfg, out / "logs" / "vllm.log")
        servers.append(vllm)
        info["commands"] = {"transformers": ManagedServer(tf_cfg, out / "logs" / "tf.log"
                                                          ).command(), "vllm": vllm.command()}
        info["memory_idle"] = {"transformers": memory(tf) if tf else None,
                               "vllm": memory(vllm)}
        settings = settings.model_copy(update={"base_url": vllm_cfg.base_url})
        ladder = load_ladder(PRESETS, "seed-004")
        steps = lad.plan(ladder, PRESETS, tf_cfg.base_url if tf else None)
        for step, v in zip(ladder.steps, steps, strict=True):
            left = a.budget_s - (time.time() - t_start)
            if a.claims_only:
                break
            if isinstance(v, str) or left < 90:
                info["steps"][step.label] = {"skipped": v if isinstance(v, str) else
                                             f"only {left:.0f} s of the budget left"}
                continue
            path = out / "ladder" / f"step-{v.name[-1]}.jsonl"
            t0 = time.time()
            asyncio.run(run_step(settings, v, a, path))
            server = tf if v.engine == "transformers" and tf else vllm
            info["steps"][step.label] = {"file": path.name, "wall_s": round(time.time() - t0, 1),
                                         "memory": memory(server)}
            print(f"[{step.label}] {time.time() - t0:.0f}s", flush=True)
            (out / "ladder" / "run.json").write_text(json.dumps(info, indent=1), "utf-8")
        if a.budget_s - (time.time() - t_start) > 60 and not a.claims_only:
            prompt = load_dataset(PRESETS, "address", 1)[0]["input"]
            records, slots = asyncio.run(play_once(settings, steps, prompt))
            env = lad.environment(ladder.name, slots)
            env["note"] = a.server_note or "played once by benchmarks/engines.py"
            save(from_history(records, title=f"ladder {ladder.name} ({a.server_note or 'run'})",
                              environment=env), out / "ladder" / "recording.json")
        left = a.budget_s - (time.time() - t_start)
        if left > 60:
            env = {**os.environ, "PLAYGROUND_PRESETS_DIR": str(claim_presets(
                out, tf_cfg.base_url, vllm_cfg.base_url)),
                "PLAYGROUND_RUNS_DIR": str(out / "claims-runs"),
                "PLAYGROUND_TIMEOUT_S": "900", "PLAYGROUND_READ_TIMEOUT_S": "900"}
            note = (f"{a.server_note}; " if a.server_note else "") + (
                f"Transformers (`transformers serve` defaults) and vLLM (preset "
                f"{a.vllm_preset}) side by side, same model directory and weights")
            only = ["--only", "engine", "--only", "sdk"] if tf else ["--only", "sdk"]
            done = subprocess.run(
                [sys.executable, "-m", "playground.cli", "claims", *only,
                 "--base-url", vllm_cfg.base_url, "--no-api-checks", "--out",
                 str(out / "claims-engines"), "--server-note", note],
                env=env, timeout=max(30, int(left - 10)), capture_output=True, text=True)
            (out / "logs" / "claims.log").write_text(done.stdout + done.stderr, "utf-8")
            info["claims_rc"] = done.returncode
    finally:
        for s in servers:
            s.stop()
        info["wall_s"] = round(time.time() - t_start, 1)
        (out / "ladder" / "run.json").write_text(json.dumps(info, indent=1), "utf-8")
    if a.claims_only:
        return 0
    table = ladder_report.table(out / "ladder")
    (out / "ladder" / "ladder.json").write_text(json.dumps(table, indent=1), "utf-8")
    print(ladder_report.markdown(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The H200 runs (issue 8/8), run ON the GPU machine after staging (see benchmarks/gpu/README.md).

    python3 benchmarks/gpu/h200.py one-server DIR [ARCHIVE.tgz]  # claims, replay, grid
    python3 benchmarks/gpu/h200.py server-ab DIR [ARCHIVE.tgz]   # eager, chunked-prefill A/Bs
    python3 benchmarks/gpu/h200.py load DIR [ARCHIVE.tgz]        # load path vs vllm bench
    python3 benchmarks/gpu/h200.py engines DIR [ARCHIVE.tgz]     # Transformers ladder, 2 claims
    H200_SKIP=claims,recording python3 benchmarks/gpu/h200.py ...  # leave out steps already run

Everything goes through the project's own CLI and code: one managed vLLM (CUDA graphs, the
qwen3 reasoning parser, xgrammar without whitespace, per-request metrics) serving the demo
model at the real Qwen3-0.6B dimensions with --load-format dummy (random weights: outputs are
gibberish, fixed-length comparisons use ignore_eos; timings are the architecture's real ones).
Each step has its own time limit; a failed step is recorded (rc, log) and the next one runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from playground.core.record import values  # noqa: E402
from playground.lab.stats import percentile  # noqa: E402
from playground.lab.store import read_run  # noqa: E402
from playground.server import machine  # noqa: E402
from playground.server.managed import ManagedServer, cpu_demo_config  # noqa: E402

MODEL = Path("/tmp/model-0.6b")
PORT = 8000
SWEEP = [(1, 1), (8, 1), (32, 2), (128, 4)]  # (concurrency, repetitions over 64 examples)


def unpack_model() -> None:
    if not (MODEL / "config.json").exists():
        with tarfile.open("/tmp/gpu/model.tar.xz") as t:
            t.extractall("/tmp")  # our own archive


SKIP = {s for s in os.environ.get("H200_SKIP", "").split(",") if s}  # steps a run already has


def step(name: str, cmd: list[str], out: Path, results: list[dict], timeout: int,
         env: dict[str, str] | None = None) -> int:
    """Run one CLI step with its own time limit; its output goes straight to logs/NAME.log
    (so a step that times out still leaves what it printed). The archive is refreshed after
    every step, so a command cut off by the device's limit still brings back what finished.
    A step named in H200_SKIP (comma-separated) is not run: its rc is recorded as None."""
    if name in SKIP:
        results.append({"step": name, "rc": None, "wall_s": 0, "skipped": "H200_SKIP"})
        return 1
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    with (logs / f"{name}.log").open("w", encoding="utf-8") as log:
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=timeout,
                                env={**os.environ, **(env or {})}, cwd=ROOT).returncode
        except subprocess.TimeoutExpired:
            rc = 124
            log.write(f"\n=== timed out after {timeout} s\n")
    wall = time.time() - t0
    results.append({"step": name, "rc": rc, "wall_s": round(wall, 1), "cmd": cmd})
    print(f"[{name}] rc={rc} {wall:.0f}s", flush=True)
    pack(out, results)
    return rc


ARCHIVE: Path | None = None  # set by main(): one file under $OUT (the device returns few)


def pack(out: Path, results: list[dict]) -> None:
    """steps.json, the managed servers' logs, and one .tgz of the whole output folder."""
    (out / "steps-so-far.json").write_text(json.dumps(results, indent=1), "utf-8")
    server_logs = ROOT / ".cache" / "logs"
    if server_logs.is_dir():
        for f in server_logs.glob("*.log"):
            (out / "logs" / f"server-{f.name}").write_bytes(f.read_bytes())
    if ARCHIVE is not None:
        tmp = ARCHIVE.with_suffix(".part")
        def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
            # the sweep's own HTML reports repeat plotly.js 4 times; sweep.json summarises them
            # (a file coming back from the device is at most 16 MiB)
            if info.issym():  # the Transformers server's name link (logs/transformers-PORT)
                return None
            return None if "/sweep/" in info.name and info.name.endswith(".html") else info

        with tarfile.open(tmp, "w:gz") as t:
            t.add(out, arcname=out.name, filter=keep)
        tmp.replace(ARCHIVE)


def keep_runs(src: Path, dst: Path, out: Path, results: list[dict]) -> None:
    """The claims' raw per-request run files travel back with the board (small: JSONL)."""
    if src.is_dir():
        dst.mkdir(parents=True, exist_ok=True)
        for f in src.glob("*.jsonl"):
            (dst / f.name).write_bytes(f.read_bytes())
        pack(out, results)


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "playground.cli", *args]


def sweep_summary(run_dir: Path, concurrency: int) -> dict:
    """One sweep step, with the project's one percentile convention (lab/stats)."""
    records = [r for p in sorted(run_dir.glob("bench/*.jsonl")) for r in read_run(p).timed]
    ok = [r for r in records if r.ok]
    sends = [r.raw.t_send for r in ok if r.raw.t_send is not None]
    lasts = [r.raw.t_last for r in ok if r.raw.t_last is not None]
    span = max(lasts) - min(sends) if sends and lasts else None

    def p(key: str, q: float) -> float | None:
        return percentile(values(ok, key), 100 * q)

    return {"concurrency": concurrency, "n": len(records), "failed": len(records) - len(ok),
            "ttft_p50_ms": p("ttft_ms", 0.5), "ttft_p95_ms": p("ttft_ms", 0.95),
            "e2e_p50_ms": p("e2e_ms", 0.5), "e2e_p95_ms": p("e2e_ms", 0.95),
            "tpot_p50_ms": p("tpot_ms", 0.5),
            "req_per_s": len(ok) / span if span else None}


def with_server(out: Path, steps: Callable[[str, list[dict]], None]) -> list[dict]:
    """One managed server (CUDA graphs on: no --enforce-eager) for the steps, always stopped."""
    results: list[dict] = []
    config = cpu_demo_config(MODEL, port=PORT)
    server = ManagedServer(config, out / "logs" / "vllm.log", python=sys.executable)
    t0 = time.time()
    server.start()
    try:
        server.wait_ready(timeout_s=400)
        results.append({"step": "server-start", "rc": 0, "wall_s": round(time.time() - t0, 1),
                        "cmd": server.command()})
        steps(config.base_url, results)
    finally:
        server.stop()
    return results


def one_server(out: Path) -> list[dict]:
    # vLLM 0.26's V2 model runner rejects thinking_token_budget (the thinking claim's fixed
    # reasoning length): the V1 runner serves the whole board, and the note says so
    os.environ["VLLM_USE_V2_MODEL_RUNNER"] = "0"

    def steps(url: str, results: list[dict]) -> None:
        note = "VLLM_USE_V2_MODEL_RUNNER=0 " + " ".join(results[0]["cmd"][3:])
        # most wanted first: the archive is refreshed after each step, so a command cut off
        # by the device's time limit still brings back everything before the cut
        runs = Path("/tmp/h200-runs")
        env = {"PLAYGROUND_RUNS_DIR": str(runs)}
        step("claims", cli("claims", "--base-url", url, "--out", str(out / "claims"),
                           "--server-note", note), out, results, 240, env)
        keep_runs(runs / "claims", out / "claims" / "runs", out, results)
        step("seed-vs-optimized", cli("bench", "seed-vs-optimized", "--base-url", url,
                                      "--out", str(out / "seed-vs-optimized"),
                                      "--slo-ttft-ms", "200", "--slo-e2e-ms", "1000"),
             out, results, 150, env)
        step("recording", cli("run", "--base-url", url, "--variant", "seed-default",
                              "--variant", "all-optimizations", "--record",
                              str(out / "recording.json"), "--title",
                              "H200: seed default vs all optimizations",
                              "--note", f"vLLM on an H200, Qwen3-0.6B dimensions, random "
                              f"weights; {note}"), out, results, 60, env)
        # fidelity and the concurrency sweep: the `load` phase (load_phase)
        step("grid", cli("bench", "thinking-x-guided-json", "--base-url", url, "--out",
                         str(out / "grid")), out, results, 120, env)

    return with_server(out, steps)


def fidelity_cmd(url: str, out: Path) -> list[str]:
    """12 blocks per reader (H200_FID_BLOCKS; 2 waves of the concurrency each), interleaved
    and rotated: 4 pairs never reject at 0.05, 6 are the fewest that can; each block's fixed
    cost (a vllm bench start, reader processes) is what limits the count in one device command
    (12: ~320 s on an H100). The SDK reader up to c32. The server's /metrics and the GPU are
    sampled every 0.25 s during each level."""
    blocks = os.environ.get("H200_FID_BLOCKS", "12")
    return [sys.executable, "benchmarks/fidelity.py", "--base-url", url, "--tokenizer",
            str(MODEL), "--concurrency", "1,8,32,128,256", "--num-prompts", "32", "--waves",
            "2", "--blocks", blocks, "--sdk-up-to", "32", "--output-len", "32", "--out",
            str(out / "fidelity")]


def fidelity_phase(out: Path) -> list[dict]:
    """The fidelity sweep alone (long blocks) and the one-process profile at c256."""
    def steps(url: str, results: list[dict]) -> None:
        step("fidelity", fidelity_cmd(url, out), out, results, 440)
        step("client-profile-c256", [sys.executable, "benchmarks/client_profile.py",
                                     "--base-url", url, "--concurrency", "256",
                                     "--output-len", "32", "--out", str(out / "profile-c256")],
             out, results, 60)

    return with_server(out, steps)


def load_phase(out: Path) -> list[dict]:
    """Issue 4/6: the load path against vllm bench serve, one server, one command. Most wanted
    first (the archive is refreshed after every step)."""
    return with_server(out, lambda url, results: load_steps(out, url, results))


def load_steps(out: Path, url: str, results: list[dict]) -> None:
    step("fidelity", fidelity_cmd(url, out), out, results, 420)
    step("client-profile", [sys.executable, "benchmarks/client_profile.py", "--base-url",
                            url, "--concurrency", "32,128", "--output-len", "64",
                            "--out", str(out / "profile")], out, results, 150)
    step("sweep", cli("sweep", "--base-url", url, "--concurrency",
                      "1,8,32,128,256,512,1024", "--output-len", "64", "--num-prompts",
                      "64", "--out", str(out / "sweep")), out, results, 200)
    runs = Path("/tmp/h200-load-runs")
    step("probe-under-load", cli("bench", "seed-vs-optimized", "--base-url", url,
                                 "--background", "64", "--background-engine",
                                 "vllm-bench", "--out", str(out / "probe-under-load")),
         out, results, 200, {"PLAYGROUND_RUNS_DIR": str(runs)})
    bench_sweep = []
    for conc, reps in SWEEP:
        exp = Path(f"/tmp/sweep-c{conc}.yaml")
        exp.write_text(f"name: sweep-c{conc}\ndescription: all-optimizations at "
                       f"concurrency {conc}\nvariants: [all-optimizations]\nexamples: 64\n"
                       f"repetitions: {reps}\nwarmup: 2\nconcurrency: {conc}\n", "utf-8")
        rdir = Path(f"/tmp/sweep-runs-c{conc}")
        if step(f"bench-sweep-c{conc}", cli("bench", str(exp), "--base-url", url, "--out",
                                            str(out / f"bench-sweep/c{conc}")),
                out, results, 120, {"PLAYGROUND_RUNS_DIR": str(rdir)}) == 0:
            bench_sweep.append(sweep_summary(rdir, conc))
        (out / "bench-sweep.json").write_text(json.dumps(bench_sweep, indent=1), "utf-8")


def ray_phase(out: Path) -> list[dict]:
    """Issue 5/7 on the GPU machine (7/7 item 2), one server: the load path's readers on Ray (8
    actors of an embedded cluster on the machine's cores) at c128, c256 and c512 against vllm
    bench serve, in H200_RAY_BLOCKS alternating blocks (default 2: each engine goes first once),
    then a Poisson rate sweep that stops when the server saturates (the send delay per request;
    sweep.html draws the Pareto view). Every level samples the server's /metrics and the GPU."""
    blocks = int(os.environ.get("H200_RAY_BLOCKS", "2"))
    engines = [("ray", ["--engine", "playground", "--workers", "8"]),
               ("vllm-bench", ["--engine", "vllm-bench"])]

    (out / "ray").mkdir(parents=True, exist_ok=True)  # the sweeps' --out must have a parent

    def steps(url: str, results: list[dict]) -> None:
        for blk in range(blocks):
            for name, flags in engines if blk % 2 == 0 else engines[::-1]:
                step(f"{name}-b{blk}", cli("sweep", "--base-url", url, "--concurrency",
                                           "128,256,512", *flags, "--output-len", "64",
                                           "--num-prompts", "64", "--out",
                                           str(out / "ray" / f"{name}-b{blk}")),
                     out, results, 170)
        step("rate-sweep", cli("sweep", "--base-url", url, "--rate",
                               "25,50,100,200,400,800,1600,3200", "--arrival", "poisson",
                               "--num-prompts", "400", "--output-len", "64", "--out",
                               str(out / "ray" / "rate-sweep")), out, results, 200)

    return with_server(out, steps)


def server_ab(out: Path, budget_s: float) -> list[dict]:
    """The two server A/Bs; each claim starts its two servers one after another (vLLM's
    start-up memory profiling needs the GPU to itself) and is skipped when too little of the
    command's budget is left for it."""
    results: list[dict] = []
    env = {"PLAYGROUND_SERVE_MODEL": str(MODEL), "PLAYGROUND_RUNS_DIR": "/tmp/h200-ab-runs",
           "PLAYGROUND_BASE_URL": f"http://127.0.0.1:{PORT}/v1"}
    t0 = time.time()
    for claim in ("eager", "chunked-prefill"):
        left = budget_s - (time.time() - t0)
        if left < 150:
            results.append({"step": f"claim-{claim}", "rc": None, "wall_s": 0,
                            "skipped": f"only {left:.0f} s of the budget left"})
            continue
        step(f"claim-{claim}", cli("claims", "--only", claim, "--with-servers",
                                   "--no-api-checks", "--out", str(out / f"claims-{claim}"),
                                   "--server-note", "two managed servers on the one GPU, "
                                   "started one after another, each "
                                   "--gpu-memory-utilization 0.3"),
             out, results, int(left), env)
    keep_runs(Path("/tmp/h200-ab-runs") / "claims", out / "claims-ab-runs", out, results)
    return results


def engines_phase(out: Path, budget_s: float) -> list[dict]:
    """Issue 5/6: the Transformers baseline (seed 004's ladder A-D) and the two claims of the
    seed systems (vLLM vs Transformers, openai SDK vs LangChain): benchmarks/engines.py with
    the 0.6B-shaped demo model, which first gets saved random weights (Transformers cannot use
    --load-format dummy; vLLM then loads the same file)."""
    from playground.server.demo_model import ensure_weights

    t0 = time.time()
    results: list[dict] = []
    ensure_weights(MODEL)
    results.append({"step": "weights", "rc": 0, "wall_s": round(time.time() - t0, 1)})
    import importlib.util

    pythonpath = ""
    if importlib.util.find_spec("transformers.cli.serving") is None:  # an older `serve`
        target = Path("/tmp/tf-serve")
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                        "--target", str(target), *map(str, Path("/tmp/gpu/tf").glob("*.whl"))],
                       check=True)
        pythonpath = f"{target}:{os.environ.get('PYTHONPATH', '')}"
    import transformers

    results.append({"step": "transformers", "rc": 0, "wall_s": 0,
                    "version": transformers.__version__, "serve_pythonpath": pythonpath})
    left = budget_s - (time.time() - t0) - 15
    # the article's 10 concurrent requests: two waves of 10 per step (after 1 warm-up)
    cmd = [sys.executable, "benchmarks/engines.py", str(out / "engines"), "--model", str(MODEL),
           "--budget-s", str(int(left - 20)), "--examples", "10", "--repetitions", "2",
           "--warmup", "1", "--server-note",
           "H200, vLLM 0.26.0 (CUDA graphs) and transformers serve, one GPU",
           *os.environ.get("H200_ENGINES_ARGS", "").split()]
    if pythonpath:
        cmd += ["--transformers-pythonpath", pythonpath]
    step("engines", cmd, out, results, int(left))
    return results


def main() -> int:
    global ARCHIVE
    phase, out = sys.argv[1], Path(sys.argv[2])
    ARCHIVE = Path(sys.argv[3]) if len(sys.argv) > 3 else None
    budget_s = float(os.environ.get("H200_BUDGET_S", "560"))
    out.mkdir(parents=True, exist_ok=True)
    unpack_model()
    env = machine.describe()
    env["nvidia_smi"] = subprocess.run(["nvidia-smi"], capture_output=True, text=True).stdout
    try:
        import vllm

        env["vllm_version"] = vllm.__version__
    except ImportError as e:
        env["vllm_version"] = f"not importable: {e}"
    (out / f"{phase}-environment.json").write_text(json.dumps(env, indent=1), "utf-8")
    t0 = time.time()
    phases = {"one-server": one_server, "load": load_phase, "fidelity": fidelity_phase,
              "ray": ray_phase,
              "server-ab": lambda o: server_ab(o, budget_s),
              "engines": lambda o: engines_phase(o, budget_s)}
    results = phases[phase](out)
    (out / f"{phase}-steps.json").write_text(json.dumps(
        {"phase": phase, "wall_s": round(time.time() - t0, 1), "steps": results}, indent=1),
        "utf-8")
    pack(out, results)
    return 0 if all(r["rc"] in (0, None) for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

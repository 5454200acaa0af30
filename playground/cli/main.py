"""`playground ui | run | bench | runs | demo | serve | demo-model | models`: the CLI.

Exit codes: 0 ok; 1 a request failed; 2 bad input or unreachable server (one clear line on
stderr naming the URL or field and the fix).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import SecretStr

from playground.core.client import fetch_server_info
from playground.core.compare import compare
from playground.core.runner import Recording
from playground.errors import PlaygroundError, ValidationFailed
from playground.outputs.tables import recording_dict, row, text_table
from playground.server import demo_model
from playground.settings import Settings
from playground.specs.presets import PresetLibrary, Variant, load_yaml, variant_from_dict

DEFAULT_PROMPT = "长沙市岳麓区桃花岭路189号润丰园B座1202室 | 电话021-17613435 | 联系人江雨桐"


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.from_env(base_url=getattr(args, "base_url", None),
                             api_key=getattr(args, "api_key", None),
                             model=getattr(args, "model", None),
                             timeout_s=getattr(args, "timeout", None))


def _variant(ref: str, library: PresetLibrary, settings: Settings) -> Variant:
    path = Path(ref)
    if ref.endswith((".yaml", ".yml")) and path.is_file():
        return variant_from_dict(load_yaml(path), settings.presets_dir, source=str(path))
    return library.get(ref)


def print_comparison(recs: Sequence[Recording], as_json: bool) -> None:
    if as_json:
        print(json.dumps([recording_dict(r) for r in recs], ensure_ascii=False, indent=2))
        return
    print(text_table([row(r) for r in recs]))
    from dataclasses import asdict

    from playground.core.phases import breakdown

    for r in recs:
        m = r.metrics()
        b = breakdown(asdict(r.raw), m.e2e_ms, m.ttft_ms) if r.error is None else None
        if b is not None:
            parts = " | ".join(f"{name} {ms:,.0f}" for name, ms in b.parts)
            print(f"  {r.variant.name}: {parts} ms (= E2E {b.e2e_ms:,.0f} ms; {b.source})")
    streaming = [r for r in recs if r.request.stream]
    if len(streaming) < len(recs):
        print("\nnon-streaming: TTFT is not observable; the user sees the first character "
              "only when the whole answer arrives (first char = E2E).")


def _read_prompt_file(path: str) -> str:
    """A prompt from a file, size-checked before it is read whole."""
    from playground.core.preflight import MAX_PROMPT_CHARS, check_prompt

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_PROMPT_CHARS + 1)
    except (OSError, UnicodeDecodeError) as e:
        raise ValidationFailed("--prompt-file", f"cannot read {path}: {e}") from None
    check_prompt(text)
    return text


def cmd_run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    library = PresetLibrary(settings.presets_dir, settings.user_presets_dir)
    variants = [_variant(v, library, settings) for v in args.variant or
                ["seed-default", "all-optimizations"]]
    prompt = _read_prompt_file(args.prompt_file) if args.prompt_file else args.prompt
    recs = asyncio.run(compare(settings, variants, prompt, sequential=args.sequential))
    print_comparison(recs, args.json)
    from playground.lab.store import RunStore

    run = RunStore(settings.runs_dir).new_run("playground")  # the run history, like the UI's
    for r in recs:
        run.append(recording_dict(r))
    if args.record:
        from playground.lab.replay import from_history, save

        rec = from_history([recording_dict(r) for r in recs], title=args.title,
                           environment=recording_environment(settings, args.note))
        print(f"recording written to {save(rec, Path(args.record))}", file=sys.stderr)
    failed = [r for r in recs if r.error is not None]
    for r in failed:
        print(f"error: {r.variant.name}: {r.error}", file=sys.stderr)
    return 1 if failed else 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The embedded default, headless: ensure a server, compare the seed default vs all."""
    from playground.server.embedded import ensure_server

    settings = _settings(args)
    server = ensure_server(settings, log=lambda m: print(m, file=sys.stderr))
    try:
        if server.model_note:
            print(f"NOTE: {server.model_note}\n", file=sys.stderr)
        settings = settings.model_copy(update={"base_url": server.base_url})
        library = PresetLibrary(settings.presets_dir, settings.user_presets_dir)
        variants = [library.get(n) for n in ("seed-default", "streaming", "all-optimizations")]
        recs = asyncio.run(compare(settings, variants, args.prompt))
        print_comparison(recs, args.json)
        if args.keep_server and server.managed is not None:
            print(f"\nserver left running at {server.base_url} (Ctrl-C stops it)",
                  file=sys.stderr)
            signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        server.stop()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from playground.server.embedded import ensure_server
    from playground.server.managed import load_server_presets

    settings = _settings(args)
    preset = None
    if args.preset:
        presets, errors = load_server_presets(settings.presets_dir)
        for e in errors:
            print(f"warning: {e}", file=sys.stderr)
        if args.preset not in presets:
            raise ValidationFailed("server preset", f"unknown {args.preset!r}; known: "
                                   + ", ".join(sorted(presets)))
        preset = presets[args.preset]
    server = ensure_server(settings, log=lambda m: print(m, file=sys.stderr), preset=preset,
                           model=args.serve_model or args.model)
    if server.managed is not None:
        print("effective command: " + " ".join(server.managed.command()), file=sys.stderr)
    print(f"vLLM ready at {server.base_url}. {server.model_note} Ctrl-C stops it.",
          file=sys.stderr, flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        server.stop()
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    from playground.ui.app import launch

    settings = _settings(args)
    if args.auth:
        settings = settings.model_copy(update={"auth": SecretStr(args.auth)})
    launch(settings, host=args.host, port=args.port, share=args.share,
           manage_server=not args.no_server, replay_only=True if args.replay else None)
    return 0


def recording_environment(settings: Settings, note: str | None) -> dict[str, object]:
    """What a recording says about where it was measured (never the key or the URL)."""
    from playground.server import machine
    from playground.server.demo_model import is_demo_dir

    m = machine.describe()
    env: dict[str, object] = {"accelerator": m["accelerator"], "cpu": m["cpu"]}
    try:
        info = fetch_server_info(settings.base_url, settings.api_key_value())
        env.update(vllm_version=info.version, model=", ".join(x.id for x in info.models),
                   demo_model=any(is_demo_dir(x.root) for x in info.models))
    except PlaygroundError:
        pass
    if note:
        env["note"] = note
    return env


def cmd_record(args: argparse.Namespace) -> int:
    from playground.lab.replay import from_history, save
    from playground.lab.store import read_run

    env = {"note": args.note} if args.note else {}
    rec = from_history(read_run(Path(args.run)), title=args.title, environment=env)
    path = save(rec, Path(args.out))
    names = ", ".join(c.variant.get("name", "?") for c in rec.columns)
    print(f"recording ({len(rec.columns)} columns: {names}) written to {path}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from playground.cli.bench import run_bench

    return run_bench(_settings(args), Path(args.experiment), Path(args.out) if args.out
                     else None, ttft_slo_ms=args.slo_ttft_ms, e2e_slo_ms=args.slo_e2e_ms,
                     background=args.background)


def cmd_claims(args: argparse.Namespace) -> int:
    from playground.cli.claims import run_claims

    return run_claims(_settings(args), Path(args.out), only=args.only,
                      with_servers=args.with_servers, api_checks=not args.no_api_checks,
                      examples=args.examples, repetitions=args.repetitions,
                      server_note=args.server_note or "")


def cmd_runs(args: argparse.Namespace) -> int:
    from playground.cli.bench import compare_runs, list_runs

    settings = _settings(args)
    if args.action == "list":
        return list_runs(settings)
    if len(args.runs) != 2:
        print("error: runs compare needs two run files (see `playground runs list`)",
              file=sys.stderr)
        return 2
    return compare_runs(settings, [Path(r) for r in args.runs])


def cmd_demo_model(args: argparse.Namespace) -> int:
    path = demo_model.build(Path(args.dir), args.size)
    print(f"demo model ({args.size}, random weights) written to {path}; serve it with "
          "--load-format dummy")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    settings = _settings(args)
    info = fetch_server_info(settings.base_url, settings.api_key_value())
    print(f"vLLM {info.version} at {settings.base_url} (healthy: {info.healthy})")
    for m in info.models:
        print(f"  {m.id}  (root {m.root}, max_model_len {m.max_model_len})")
    return 0


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
    p.add_argument("--auth", help="USER:PASSWORD protecting the UI (better: env "
                   "PLAYGROUND_AUTH); never printed")
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
    p.add_argument("--background", type=int, help="probe under load: keep N (0-64) "
                   "background requests in flight during the timed trials")
    p.set_defaults(func=cmd_bench)

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

    p = sub.add_parser("runs", help="list past benchmark runs, or compare two")
    p.add_argument("action", choices=["list", "compare"])
    p.add_argument("runs", nargs="*", help="two run files for `compare`")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("serve", help="start (or reuse) a local vLLM server and keep it running")
    _connection_args(p)
    p.add_argument("preset", nargs="?", help="server preset from presets/servers/ (e.g. "
                   "recommended, eager, seed-000)")
    p.add_argument("--serve-model", help="model to serve (path or hub id; default: "
                   "Qwen/Qwen3-0.6B if available, else the offline demo model)")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("demo-model", help="build the offline demo model directory")
    p.add_argument("dir")
    p.add_argument("--size", choices=["tiny", "0.6b"], default="tiny")
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

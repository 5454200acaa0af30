"""`playground run | demo | record | models`: one comparison from the command line."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

from playground.cli.common import DEFAULT_PROMPT, out_file, settings_of
from playground.core.compare import compare
from playground.core.preflight import MAX_PROMPT_CHARS, check_prompt
from playground.core.record import RequestRecord
from playground.core.runner import Recording
from playground.errors import ValidationFailed
from playground.lab.replay import from_history, save
from playground.lab.store import RunStore, read_run
from playground.outputs.fmt import DEMO_NOTICE
from playground.outputs.tables import row, text_table
from playground.server.environment import environment, recording_environment
from playground.server.http import server_info
from playground.settings import Settings
from playground.specs.presets import PresetLibrary, Variant, load_yaml, variant_from_dict

__all__ = ["DEFAULT_PROMPT", "cmd_demo", "cmd_models", "cmd_record", "cmd_run"]


def _variant(ref: str, library: PresetLibrary, settings: Settings) -> Variant:
    path = Path(ref)
    if ref.endswith((".yaml", ".yml")) and path.is_file():
        return variant_from_dict(load_yaml(path), settings.presets_dir, source=str(path))
    return library.get(ref)


def print_comparison(recs: Sequence[Recording], as_json: bool) -> None:
    records = [RequestRecord.of(r) for r in recs]
    if as_json:
        print(json.dumps([r.line() for r in records], ensure_ascii=False, indent=2))
        return
    print(text_table([row(r) for r in recs]))
    for r in records:
        b = r.phases()
        if b is not None:
            parts = " | ".join(f"{name} {ms:,.0f}" for name, ms in b.parts)
            print(f"  {r.name}: {parts} ms (= E2E {b.e2e_ms:,.0f} ms; {b.source})")
    if any(not r.request.stream for r in recs):
        print("\nnon-streaming: TTFT is not observable; the user sees the first character "
              "only when the whole answer arrives (first char = E2E).")


def _read_prompt_file(path: str) -> str:
    """A prompt from a file, size-checked before it is read whole."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(MAX_PROMPT_CHARS + 1)
    except (OSError, UnicodeDecodeError) as e:
        raise ValidationFailed("--prompt-file", f"cannot read {path}: {e}") from None
    check_prompt(text)
    return text


def cmd_run(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    library = PresetLibrary(settings.presets_dir, settings.user_presets_dir)
    variants = [_variant(v, library, settings) for v in args.variant or
                ["seed-default", "all-optimizations"]]
    prompt = _read_prompt_file(args.prompt_file) if args.prompt_file else args.prompt
    recs = asyncio.run(compare(settings, variants, prompt, sequential=args.sequential))
    print_comparison(recs, args.json)
    records = [RequestRecord.of(r) for r in recs]
    run = RunStore(settings.runs_dir).new_run("playground")  # the run history, like the UI's
    for r in records:
        run.append(r)
    if args.record:
        env = asyncio.run(environment(settings.base_url, settings.api_key_value()))
        rec = from_history(records, title=args.title,
                           environment=recording_environment(env, args.note))
        print(f"recording written to {save(rec, Path(args.record))}", file=sys.stderr)
    failed = [r for r in recs if r.error is not None]
    for r in failed:
        print(f"error: {r.variant.name}: {r.error}", file=sys.stderr)
    return 1 if failed else 0


def cmd_demo(args: argparse.Namespace) -> int:
    """The embedded default, headless: ensure a server, compare the seed default vs all."""
    from playground.server.embedded import ensure_server

    settings = settings_of(args)
    server = ensure_server(settings, log=lambda m: print(m, file=sys.stderr))
    try:
        if server.is_demo_model:
            print(f"NOTE: {DEMO_NOTICE}\n", file=sys.stderr)
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


def cmd_record(args: argparse.Namespace) -> int:
    env = {"note": args.note} if args.note else {}
    rec = from_history(read_run(Path(args.run)).requests, title=args.title, environment=env)
    path = save(rec, out_file(args.out))
    names = ", ".join(c.variant.get("name", "?") for c in rec.columns)
    print(f"recording ({len(rec.columns)} columns: {names}) written to {path}")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    info = server_info(settings.base_url, settings.api_key_value())
    print(f"vLLM {info.version} at {settings.base_url} (healthy: {info.healthy})")
    for m in info.models:
        print(f"  {m.id}  (root {m.root}, max_model_len {m.max_model_len})")
    return 0

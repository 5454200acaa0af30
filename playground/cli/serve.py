"""`playground serve | ui | demo-model`: servers and the web UI."""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from pydantic import SecretStr

from playground.cli.common import settings_of
from playground.errors import ValidationFailed
from playground.outputs.fmt import DEMO_NOTICE
from playground.server import demo_model, small_model
from playground.settings import Settings


def cmd_serve(args: argparse.Namespace) -> int:
    from playground.server.embedded import ensure_server
    from playground.server.presets import load_server_presets

    settings = settings_of(args)
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
    engine = server.managed.engine_name if server.managed is not None else "vLLM"
    if engine == "vLLM" and (settings.warmup == "always" or (
            server.managed is not None and settings.warmup == "auto")):
        warm_up(settings, server.base_url)  # the presets' vLLM paths; not for Transformers
    note = f" {DEMO_NOTICE}" if server.is_demo_model else ""
    print(f"{engine} ready at {server.base_url}.{note} Ctrl-C stops it.", file=sys.stderr,
          flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        server.stop()
    return 0


def warm_up(settings: Settings, base_url: str) -> None:
    """Each preset's path and each schema's grammar once, so the first real run is warm."""
    import asyncio

    from playground.core.pool import ClientPool
    from playground.core.warmup import WarmState, warm_server
    from playground.specs.presets import PresetLibrary

    state = WarmState()
    key = settings.api_key_value()

    async def go() -> None:
        pool = ClientPool(key, connect_timeout_s=settings.connect_timeout_s,
                          read_timeout_s=settings.read_timeout_s, timeout_s=settings.timeout_s)
        try:
            await warm_server(pool, base_url, key, settings.model,
                              PresetLibrary(settings.presets_dir, settings.user_presets_dir),
                              state)
        finally:
            await pool.aclose()

    print("warming up: each preset's path and each schema's grammar once...", file=sys.stderr,
          flush=True)
    try:
        asyncio.run(go())
    except Exception as e:  # a failed warm-up leaves a working, cold server
        print(f"warm-up failed ({e}); the server is up but its first runs are cold",
              file=sys.stderr)
        return
    print(state.text(), file=sys.stderr)
    for note in state.notes[:5]:
        print(f"  warm-up request failed: {note}", file=sys.stderr)


def cmd_ui(args: argparse.Namespace) -> int:
    from playground.ui.app import launch

    settings = settings_of(args)
    if args.auth_file:
        try:
            text = Path(args.auth_file).read_text("utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise ValidationFailed("--auth-file", f"cannot read {args.auth_file}: {e}") from None
        settings = settings.model_copy(update={"auth": SecretStr(
            ",".join(line.strip() for line in text.replace(",", "\n").splitlines()
                     if line.strip()))})
    elif args.auth:
        print("warning: --auth puts the password in this process's command line, which every "
              "user of this machine can read (ps); prefer --auth-file FILE or PLAYGROUND_AUTH",
              file=sys.stderr)
        settings = settings.model_copy(update={"auth": SecretStr(args.auth)})
    if args.all_runs:
        settings = settings.model_copy(update={"list_all_runs": True})
    for flag in ("allow_visitor_servers", "allow_visitor_urls", "allow_private_urls"):
        if getattr(args, flag, False):
            settings = settings.model_copy(update={flag: True})
    settings.auth_pairs()  # a malformed USER:PASSWORD is named before anything starts
    launch(settings, host=args.host, port=args.port, share=args.share,
           manage_server=not args.no_server, replay_only=True if args.replay else None)
    return 0




def cmd_demo_model(args: argparse.Namespace) -> int:
    if args.real_small:
        path = small_model.build(Path(args.dir), log=lambda m: print(m, file=sys.stderr))
        print(f"SmolLM2-135M-Instruct (real weights) written to {path}; serve it with "
              f"`playground serve --serve-model {path}` (or --preset real-small)")
        return 0
    path = demo_model.build(Path(args.dir), args.size)
    print(f"demo model ({args.size}, random weights) written to {path}; serve it with "
          "--load-format dummy")
    return 0



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


def cmd_serve(args: argparse.Namespace) -> int:
    from playground.server.embedded import ensure_server
    from playground.server.managed import load_server_presets

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
    note = f" {DEMO_NOTICE}" if server.is_demo_model else ""
    print(f"vLLM ready at {server.base_url}.{note} Ctrl-C stops it.", file=sys.stderr,
          flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        server.stop()
    return 0


def cmd_ui(args: argparse.Namespace) -> int:
    from playground.ui.app import launch

    settings = settings_of(args)
    if args.auth:
        settings = settings.model_copy(update={"auth": SecretStr(args.auth)})
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



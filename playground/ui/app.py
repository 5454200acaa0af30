"""Start the UI: the embedded default (reuse or start a vLLM server), then launch Gradio."""

from __future__ import annotations

import atexit
import os
import signal
import sys

from ..embedded import EmbeddedServer, ensure_server
from ..settings import Settings
from . import CSS, build_ui
from .context import UIContext


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def launch(settings: Settings, *, host: str = "127.0.0.1", port: int = 7860,
           share: bool = False, manage_server: bool = True) -> None:
    server: EmbeddedServer | None = None
    banner = ""
    if manage_server:
        server = ensure_server(settings, log=lambda m: print(m, file=sys.stderr))
        atexit.register(server.stop)
        settings = settings.model_copy(update={"base_url": server.base_url})
        banner = server.model_note
    ctx = UIContext.create(settings, banner)
    demo = build_ui(ctx)
    # SIGTERM (e.g. from a supervisor) must run the cleanup below, like Ctrl-C does: Gradio
    # closes its server on KeyboardInterrupt and launch() returns.
    signal.signal(signal.SIGTERM, _interrupt)
    print(f"qwen-latency-lab UI on http://{host}:{port} (vLLM: {settings.base_url})",
          file=sys.stderr)
    try:
        demo.launch(server_name=host, server_port=port, share=share, css=CSS,
                    footer_links=["api", "gradio"])
    finally:
        ctx.stop_servers()
        if server is not None:
            server.stop()
        # Servers are stopped; do not let a lingering worker thread (Gradio, timers, the
        # measuring loop) keep a closed app alive.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

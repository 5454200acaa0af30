"""Start the UI: the embedded default (reuse or start a vLLM server), then launch Gradio.

Also the sharing rules: `--share` only when the share server can be reached (otherwise a
clear message and the app keeps running locally), a warning when a shared or non-local UI
has no authentication, and replay mode when no server is configured on a Space.
"""

from __future__ import annotations

import atexit
import os
import signal
import socket
import sys

from starlette.middleware import Middleware

from playground.lab.replay import MAX_BYTES
from playground.outputs.fmt import DEMO_NOTICE
from playground.server.embedded import EmbeddedServer, ensure_server
from playground.settings import Settings
from playground.ui.blocks import CSS, build_ui
from playground.ui.context import UIContext
from playground.ui.live_feed import head_js
from playground.ui.login import ClientAddress, SlowLogin
from playground.ui.quotas import UploadQuota
from playground.ui.readers import ReaderWatch

SHARE_HOST = "api.gradio.app:443"
REPLAY_BANNER = ("Replay mode: no vLLM server is configured, so this app replays recorded "
                 "comparisons with their real timings (Playground tab, 'Replay a recording').")


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def share_reachable(target: str | None = None, timeout_s: float = 3.0) -> bool:
    """Can Gradio's share server be reached? (PLAYGROUND_SHARE_CHECK overrides the host.)"""
    host, _, port = (target or os.environ.get("PLAYGROUND_SHARE_CHECK") or SHARE_HOST
                     ).rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def is_local(host: str) -> bool:
    return host in ("127.0.0.1", "localhost", "::1")


def on_space() -> bool:
    return bool(os.environ.get("SPACE_ID"))


def launch(settings: Settings, *, host: str = "127.0.0.1", port: int = 7860,
           share: bool = False, manage_server: bool = True,
           replay_only: bool | None = None) -> None:
    """`replay_only=None`: replay mode on a Hugging Face Space with no PLAYGROUND_BASE_URL."""
    log = lambda m: print(m, file=sys.stderr)  # noqa: E731
    if replay_only is None:
        replay_only = on_space() and not os.environ.get("PLAYGROUND_BASE_URL")
    auth = settings.auth_pairs()  # a malformed value fails here, before anything starts
    if (share or not is_local(host)) and not auth:
        log("warning: this UI is meant to be reachable by others (" + (
            "--share" if share else f"host {host}") + ") but has no authentication: anyone "
            "who can open it can use your server. Set --auth USER:PASSWORD or PLAYGROUND_AUTH.")
    if share and not share_reachable():
        log("--share: no internet connection (Gradio's share server "
            f"{os.environ.get('PLAYGROUND_SHARE_CHECK') or SHARE_HOST} cannot be reached); "
            "no public link -- the app keeps running locally.")
        share = False
    server: EmbeddedServer | None = None
    banner = note = ""
    if replay_only:
        manage_server = False
        banner = REPLAY_BANNER
    if manage_server:
        server = ensure_server(settings, log=log)
        atexit.register(server.stop)
        settings = settings.model_copy(update={"base_url": server.base_url})
        banner = DEMO_NOTICE if server.is_demo_model else ""
        if server.managed is not None:
            note = " ".join(server.managed.command())
    # shared: others can open it -- server powers and other base URLs stay the operator's
    shared = share or not is_local(host) or bool(auth) or on_space()
    ctx = UIContext.create(settings, banner, note, replay_only=replay_only, shared=shared)
    started = server is not None and server.managed is not None
    if not replay_only and (settings.warmup == "always" or (started and settings.warmup == "auto")):
        ctx.start_warmup()  # a server we just brought up: its first run should not be cold
    demo = build_ui(ctx)
    # SIGTERM (e.g. from a supervisor) must run the cleanup below, like Ctrl-C does: Gradio
    # closes its server on KeyboardInterrupt and launch() returns.
    signal.signal(signal.SIGTERM, _interrupt)
    where = "replay mode, no server" if replay_only else f"vLLM: {settings.base_url}"
    log(f"qwen-latency-lab UI on http://{host}:{port} ({where})")
    try:
        # uploads over the recording limit are refused by Gradio before they reach the disk
        demo.launch(server_name=host, server_port=port, share=share, css=CSS,
                    auth=SlowLogin(auth).check if auth else None, footer_links=["api", "gradio"],
                    max_file_size=MAX_BYTES,
                    head=head_js(), app_kwargs={
                        "routes": ctx.routes(),
                        # the login check learns who is asking: its throttle is per address
                        # a /compare call no one reads is stopped: its readers are counted
                        "middleware": [Middleware(ClientAddress, address=ctx.visitor),
                                       Middleware(ReaderWatch, readers=ctx.readers)] + (
                            # a stranger's uploads are counted: the disk is the operator's
                            [Middleware(UploadQuota, address=ctx.visitor)] if shared else [])})
    finally:
        ctx.shutdown()  # runs in flight: stopped, stored; then the servers we started
        if server is not None:
            server.stop()
        # Servers are stopped; do not let a lingering worker thread (Gradio, timers, the
        # measuring loop) keep a closed app alive.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

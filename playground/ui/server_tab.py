"""The Server tab: start / stop / restart a managed vLLM with a server preset; status, log."""

from __future__ import annotations

import asyncio
from typing import Any

import gradio as gr

from playground.errors import PlaygroundError
from playground.outputs.fmt import md_text
from playground.server.embedded import preset_config
from playground.server.http import ais_healthy, aserver_info
from playground.server.managed import ManagedServer
from playground.server.presets import load_server_presets
from playground.ui.context import UIContext


def build(ctx: UIContext) -> tuple[gr.Timer, gr.Markdown]:
    """The tab; returns its status timer, which ticks only while the tab is open, and its
    line naming the page's own connection, drawn when the tab opens (blocks)."""
    presets, errors = load_server_presets(ctx.settings.presets_dir)
    connection = gr.Markdown("", elem_id="server-tab-connection")
    gr.Markdown("Start a server of this app's own with a preset from `presets/servers/`: vLLM, "
                "or Hugging Face Transformers with the `transformers` preset (the ladder's "
                "step A runs on it). It serves the same model as the embedded default (the "
                "offline demo model when Qwen/Qwen3-0.6B cannot be downloaded), or the model "
                "directory given below (a merged LoRA, a fine-tune). Point a variant or the "
                "connection at its URL to compare server configurations.")
    if errors:
        gr.Markdown("⚠️ Skipped bad server presets:\n"
                    + "\n".join(f"- {md_text(e)}" for e in errors))
    with gr.Row():
        preset = gr.Dropdown(sorted(presets), value="eager" if "eager" in presets else None,
                             label="server preset", scale=2)
        port = gr.Number(8100, label="port", precision=0)
        start = gr.Button("Start", variant="primary")
        restart = gr.Button("Restart")
        stop = gr.Button("Stop", variant="stop")
    model_dir = gr.Textbox("", label="model directory (empty = the default model)",
                           placeholder="/path/to/merged-lora", elem_id="server-model-dir")
    status = gr.Markdown("_no managed server started from this tab_", elem_id="server-tab-status")
    flags = gr.Code(label="effective command", language="shell", interactive=False,
                    elem_id="server-flags")
    log = gr.Code(label="log tail", interactive=False, elem_id="server-log")
    timer = gr.Timer(2.0, active=False)

    def managed(p: int) -> ManagedServer | None:
        return ctx.servers.get(int(p))

    async def do_start(name: str, p: float, model_path: str = "", force: bool = False
                       ) -> dict[Any, Any]:
        p = int(p)
        if refused := ctx.servers_refused():
            return {status: f"❌ {refused}"}
        if name not in presets:
            return {status: f"❌ server preset: unknown {name!r}"}
        server = managed(p)
        if server is not None and server.running and not force:
            return {status: f"already running on port {p}; use Restart"}
        url = f"http://127.0.0.1:{p}/v1"
        if server is None and await ais_healthy(url):
            return {status: f"❌ port {p}: another server already answers at {url}; pick "
                            "another port"}
        # a Transformers preset on the demo model saves its weights first: off the loop
        try:
            config, _ = await asyncio.to_thread(preset_config, ctx.settings, p, presets[name],
                                                model_path.strip() or None)
        except PlaygroundError as e:
            return {status: f"❌ {md_text(e)}"}
        if server is None:
            server = ManagedServer(config, ctx.settings.cache_dir / "logs" / f"vllm-{p}.log",
                                   python=ctx.settings.server_python())
            ctx.servers[p] = server
        else:
            await asyncio.to_thread(server.stop)
            server.config = config
        server.start()  # on the event loop's (long-lived) thread: see ManagedServer.start
        try:
            await asyncio.to_thread(server.wait_ready)
        except PlaygroundError as e:
            return {status: f"❌ {md_text(e)}", log: server.log_tail()}
        return await _status(server)

    async def _status(server: ManagedServer | None) -> dict[Any, Any]:
        if server is None:
            return {status: "_no managed server_"}
        url = server.config.base_url
        if not server.running:
            return {status: f"stopped (port {server.config.port})", log: server.log_tail()}
        try:
            info = await aserver_info(url, None)
            text = (f"✅ running · vLLM **{md_text(info.version, 40)}** at `{url}` · healthy: "
                    f"{info.healthy} · models: {md_text(', '.join(m.id for m in info.models))}")
        except PlaygroundError:
            text = f"⏳ starting… (`{url}` refuses connections until the engine is up)"
        return {status: text, flags: " ".join(server.command()), log: server.log_tail()}

    async def do_restart(name: str, p: float, model_path: str = "") -> dict[Any, Any]:
        return await do_start(name, p, model_path, force=True)

    async def do_stop(p: float) -> dict[Any, Any]:
        if refused := ctx.servers_refused():
            return {status: f"❌ {refused}"}
        server = managed(int(p))
        if server is None:
            return {status: f"no managed server on port {int(p)}"}
        await asyncio.to_thread(server.stop)  # waits up to its grace period: not on the loop
        return await _status(server)

    async def tick(p: float) -> Any:
        server = managed(int(p))
        # nothing to refresh: one "no change" per output (an empty dict is not read as updates)
        return await _status(server) if server else [gr.skip()] * 3

    outs = [status, flags, log]
    start.click(do_start, [preset, port, model_dir], outs, api_name=False, concurrency_limit=4)
    restart.click(do_restart, [preset, port, model_dir], outs, api_name=False,
                  concurrency_limit=4)
    stop.click(do_stop, [port], outs, api_name=False)
    timer.tick(tick, [port], outs, api_name=False, show_progress="hidden")
    return timer, connection


def opened(connection: str) -> tuple[gr.Timer, str]:
    """The tab opens: its timer starts, and it says which server the page itself talks to
    (the Playground's connection line) -- a server started here is another one."""
    return gr.Timer(active=True), (
        f"**This page is connected to** (Playground → Server connection): {connection}\n\n"
        "A server started below is a different one: point a variant's base URL, or the "
        "connection, at its URL to use it.")

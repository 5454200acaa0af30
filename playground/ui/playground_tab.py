"""The Playground tab: connection, 2-4 variant columns, one prompt, live output and plots."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from playground.core import request
from playground.core.compare import prepare
from playground.core.preflight import MAX_PROMPT_CHARS, check_prompt
from playground.core.record import RequestRecord
from playground.core.runner import Recording, run_to_end
from playground.errors import PlaygroundError, ValidationFailed
from playground.outputs import figures
from playground.outputs.fmt import demo_notice
from playground.server.http import aserver_info
from playground.ui import replay_panel
from playground.ui.column_view import Column, column, controls_values, wire_column
from playground.ui.columns import (
    MAX_COLUMNS,
    variant_from_controls,
)
from playground.ui.context import UIContext
from playground.ui.live import final_updates, live_updates


@dataclass
class Session:
    """Per-browser-session state (gr.State)."""

    runs: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    last: list[RequestRecord] = field(default_factory=list)


def build(ctx: UIContext, demo: gr.Blocks) -> None:
    """Lay out the tab inside the current gr.Blocks and wire its events."""
    session = gr.State(Session())
    with gr.Accordion("Server connection", open=False), gr.Row():
        base_url = gr.Textbox(ctx.settings.base_url, label="base URL", scale=3)
        api_key = gr.Textbox("", label="API key (optional; never shown again)",
                             type="password", scale=2)
        model = gr.Dropdown([], label="model", allow_custom_value=True, scale=2)
        connect = gr.Button("Connect", scale=1)
    server_status = gr.Markdown("_connecting…_", elem_id="server-status")
    if ctx.library.errors:
        gr.Markdown("⚠️ Skipped bad preset files (the good ones are loaded):\n"
                    + "\n".join(f"- {e}" for e in ctx.library.errors), elem_id="bad-presets")

    prompt = gr.Textbox(ctx.examples[0] if ctx.examples else "", label="prompt", lines=2,
                        max_length=MAX_PROMPT_CHARS)
    if ctx.examples:
        gr.Examples([[e] for e in ctx.examples[:8]], inputs=[prompt], label="address examples")
    with gr.Row():
        n_columns = gr.Slider(2, MAX_COLUMNS, 2, step=1, label="variants", scale=2)
        mode = gr.Radio(["concurrent", "sequential (fair)"], value="concurrent",
                        label="run mode", scale=2)
        run_btn = gr.Button("Run", variant="primary", scale=1)
        stop_btn = gr.Button("Stop", variant="stop", scale=1)
    with gr.Row(equal_height=False):
        columns = [column(i, ctx) for i in range(MAX_COLUMNS)]
    with gr.Row():
        timeline = gr.Plot(label="token timeline", elem_id="timeline-plot")
        bars = gr.Plot(label="latency bars", elem_id="bars-plot")
    with gr.Accordion("This session's history", open=False):
        history_plot = gr.Plot(label="history")
        history_table = gr.Dataframe(headers=["run", "variant", "ttft_ms", "e2e_ms", "tokens"],
                                     interactive=False)
    replay_panel.build(ctx, columns, n_columns, prompt, timeline, bars, session,
                       open_=ctx.replay_only)
    with gr.Accordion("Save columns as a preset", open=False):
        with gr.Row():
            save_col = gr.Dropdown([str(i + 1) for i in range(MAX_COLUMNS)], value="1",
                                   label="column")
            save_name = gr.Textbox(label="preset name (letters, digits, - _ .)")
            save_btn = gr.Button("Save")
        save_status = gr.Markdown()

    # --- connection ------------------------------------------------------------------------
    async def do_connect(url: str, key: str) -> dict[Any, Any]:
        if ctx.replay_only and url == ctx.settings.base_url:
            return {server_status: "▶️ **Replay mode**: no vLLM server is configured here, "
                    "so the playground replays recorded comparisons (open *Replay a "
                    "recording* below). Set PLAYGROUND_BASE_URL to a server to run live.",
                    model: gr.update(choices=[], value=None)}
        try:
            info = await aserver_info(url, key or ctx.settings.api_key_value())
        except PlaygroundError as e:
            return {server_status: f"❌ {e}", model: gr.update(choices=[], value=None)}
        names = [m.id for m in info.models]
        lens = ", ".join(f"{m.id} (max_model_len {m.max_model_len})" for m in info.models)
        text = (f"✅ vLLM **{info.version}** at `{url}` · healthy: {info.healthy} · "
                f"models: {lens}")
        note = demo_notice(info)
        if note and note != ctx.banner:  # the page banner already says it for this server
            text += f"\n\n⚠️ {note}"
        return {server_status: text, model: gr.update(choices=names,
                                                      value=names[0] if names else None)}

    connect.click(do_connect, [base_url, api_key], [server_status, model], api_name=False)
    demo.load(do_connect, [base_url, api_key], [server_status, model], api_name=False)

    # --- columns ----------------------------------------------------------------------------
    n_columns.change(lambda n: [gr.update(visible=i < int(n)) for i in range(MAX_COLUMNS)],
                     n_columns, [c.box for c in columns], api_name=False)
    for c in columns:
        wire_column(c, ctx, base_url, model)

    # --- run ----------------------------------------------------------------------------------
    all_inputs = {session, base_url, api_key, model, prompt, n_columns, mode}
    for c in columns:
        all_inputs |= {c.preset, *c.controls()}
    all_outputs = [timeline, bars, history_plot, history_table, session]
    for c in columns:
        all_outputs += [*c.outputs(), c.code_py, c.code_curl]

    async def do_run(data: dict[Any, Any]):
        sess: Session = data[session]
        n = int(data[n_columns])
        url, key = data[base_url].strip(), data[api_key] or ctx.settings.api_key_value()
        text = data[prompt] or ""
        cleared: dict[Any, Any] = {}
        for c in columns:
            cleared.update({c.answer: "", c.reasoning: "", c.badge: "", c.metrics: "",
                            c.error: ""})
        try:
            check_prompt(text)
        except ValidationFailed as e:
            gr.Warning(str(e))
            yield cleared
            return
        variants: list[Any] = []
        for i, c in enumerate(columns[:n]):
            vals = [data[x] for x in c.controls()]
            try:
                variants.append(variant_from_controls(controls_values(
                    data[c.preset] or f"variant-{i + 1}", vals), ctx.library))
            except ValidationFailed as e:
                variants.append(e)
        chosen = [v for v in variants if not isinstance(v, ValidationFailed)]
        try:
            prepared = await prepare(url, key, data[model] or None, chosen, text)
        except ValidationFailed as e:  # the prompt, or the model: nothing is sent
            gr.Warning(str(e))
            yield {**cleared, **{c.error: f"❌ **not sent** -- {e}" for c in columns[:n]}}
            return
        except PlaygroundError as e:
            gr.Warning(str(e))
            yield {**cleared, **{c.error: f"❌ {e}" for c in columns[:n]}}
            return
        outcomes = iter(prepared.slots)
        recs: list[Recording] = []
        slots: list[Column] = []
        for c, v in zip(columns[:n], variants, strict=True):
            got = v if isinstance(v, ValidationFailed) else next(outcomes)
            if isinstance(got, ValidationFailed):
                cleared[c.error] = f"❌ **not sent** -- {got}"
                continue
            recs.append(got)
            slots.append(c)
            cleared[c.code_py] = request.python_snippet(got.request, url)
            cleared[c.code_curl] = request.curl_snippet(got.request, url)
        yield cleared
        if not recs:
            return
        pool = ctx.pool(key)
        run_mode = "sequential" if str(data[mode]).startswith("sequential") else "concurrent"
        try:
            work = run_to_end(pool, recs, mode=run_mode, timeout_s=ctx.settings.timeout_s)
            floor_ms = await asyncio.to_thread(ctx.floor_ms, url, key)
            async for update in live_updates(ctx.measure, work, recs, slots, timeline, bars,
                                             floor_ms):
                yield update
        finally:  # also on Stop: finished and partial (marked cancelled) results are kept
            ctx.store_run(recs)
        sess.runs += 1
        for rec in recs:
            m = rec.metrics()
            sess.history.append({"run": sess.runs, "variant": rec.variant.name,
                                 "ttft_ms": m.ttft_ms, "e2e_ms": m.e2e_ms,
                                 "tokens": m.completion_tokens})
        sess.last = [RequestRecord.of(r) for r in recs]
        final = final_updates(slots, recs, timeline, bars, floor_ms)
        final.update({history_plot: figures.history(sess.history),
                      history_table: [[h["run"], h["variant"], _r(h["ttft_ms"]),
                                       _r(h["e2e_ms"]), h["tokens"]] for h in sess.history],
                      session: sess})
        yield final

    run_event = run_btn.click(do_run, all_inputs, all_outputs, api_name=False,
                              concurrency_limit=ctx.concurrency_limit,
                              concurrency_id="runs")
    stop_btn.click(None, None, None, cancels=[run_event], api_name=False)

    # --- save preset --------------------------------------------------------------------------
    save_inputs = {save_col, save_name}
    for c in columns:
        save_inputs |= set(c.controls())

    def do_save(data: dict[Any, Any]) -> dict[Any, Any]:
        c = columns[int(data[save_col]) - 1]
        try:
            v = variant_from_controls(controls_values(data[save_name].strip(),
                                                       [data[x] for x in c.controls()]),
                                      ctx.library)
            path = ctx.library.save_user_variant(v)
        except ValidationFailed as e:
            return {save_status: f"❌ {e}"}
        names = sorted(ctx.library.variants)
        return {save_status: f"✅ saved as `{v.name}` ({path.name})",
                **{col.preset: gr.update(choices=names) for col in columns}}

    save_btn.click(do_save, save_inputs, [save_status, *[c.preset for c in columns]],
                   api_name=False)


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 1)

"""The Playground tab: connection, 2-4 variant columns, one prompt, live output and plots."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import gradio as gr

from playground.core import request
from playground.core.client import fetch_server_info
from playground.core.preflight import check_prompt, preflight
from playground.core.runner import Recording, new_recording, run_to_end
from playground.errors import PlaygroundError, ValidationFailed
from playground.outputs import figures as plots
from playground.outputs.tables import recording_dict
from playground.server.embedded import model_note
from playground.ui import replay_panel
from playground.ui.columns import (
    CUSTOM,
    MAX_COLUMNS,
    NO_SCHEMA,
    PROMPT_CHOICES,
    Controls,
    controls_from_variant,
    variant_from_controls,
)
from playground.ui.context import UIContext
from playground.ui.render import badge_md, error_md, metrics_md, phases_html

# The measuring tasks never wait on rendering: a driver task runs the requests, and the UI
# samples their recordings. Text at most every 50 ms (only columns that changed), figures at
# most every 250 ms: on a 2-core machine, rendering every chunk made the browser fall seconds
# behind and stole CPU from the server (see benchmarks/ui_fidelity.py).
TEXT_INTERVAL_S = 0.1
PLOT_INTERVAL_S = 0.2
DEFAULT_COLUMN_PRESETS = ["seed-default", "all-optimizations", "streaming", "thinking-off"]
MAX_PROMPT_CHARS = 20_000


@dataclass
class Column:
    """The components of one variant column."""

    box: Any
    preset: Any
    stream: Any
    thinking: Any
    temperature: Any
    top_p: Any
    top_k: Any
    seed: Any
    max_tokens: Any
    ignore_eos: Any
    prompt_choice: Any
    custom_prompt: Any
    schema_choice: Any
    custom_schema: Any
    answer: Any = None
    reasoning: Any = None
    badge: Any = None
    metrics: Any = None
    error: Any = None
    code_py: Any = None
    code_curl: Any = None
    phases: Any = None

    def controls(self) -> list[Any]:
        return [self.stream, self.thinking, self.temperature, self.top_p, self.top_k,
                self.seed, self.max_tokens, self.ignore_eos, self.prompt_choice,
                self.custom_prompt, self.schema_choice, self.custom_schema]

    def outputs(self) -> list[Any]:
        return [self.answer, self.reasoning, self.badge, self.metrics, self.error, self.phases]


@dataclass
class Session:
    """Per-browser-session state (gr.State)."""

    runs: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    last: list[dict[str, Any]] = field(default_factory=list)


def _column(i: int, ctx: UIContext) -> Column:
    names = sorted(ctx.library.variants)
    preset_name = DEFAULT_COLUMN_PRESETS[i]
    c = controls_from_variant(ctx.library.get(preset_name))
    schemas = [NO_SCHEMA, *ctx.library.schema_names(), CUSTOM]
    with gr.Column(visible=i < 2, min_width=280) as box:
        gr.Markdown(f"### Variant {i + 1}")
        preset = gr.Dropdown(names, value=preset_name, label=f"preset {i + 1}")
        with gr.Row():
            stream = gr.Checkbox(c.stream, label="stream")
            thinking = gr.Checkbox(c.thinking, label="thinking")
            ignore_eos = gr.Checkbox(c.ignore_eos, label="fixed length (ignore_eos)")
        temperature = gr.Slider(0, 2, c.temperature, step=0.05, label="temperature")
        with gr.Accordion("sampling & length", open=False):
            top_p = gr.Slider(0.05, 1, c.top_p, step=0.05, label="top_p")
            top_k = gr.Number(c.top_k, label="top_k (empty = server default)", precision=0)
            seed = gr.Number(c.seed, label="seed (empty = random)", precision=0)
        max_tokens = gr.Number(c.max_tokens, label="max_tokens", precision=0)
        prompt_choice = gr.Radio(PROMPT_CHOICES, value=c.prompt_choice, label="system prompt")
        custom_prompt = gr.Textbox(c.custom_prompt, label="custom system prompt", lines=2,
                                   visible=c.prompt_choice == CUSTOM)
        schema_choice = gr.Dropdown(schemas, value=c.schema_choice, label="guided JSON")
        custom_schema = gr.Code(c.custom_schema if c.schema_choice == CUSTOM else "",
                                language="json", label=f"pasted JSON Schema {i + 1}",
                                visible=c.schema_choice == CUSTOM, interactive=True)
        col = Column(box, preset, stream, thinking, temperature, top_p, top_k, seed,
                     max_tokens, ignore_eos, prompt_choice, custom_prompt, schema_choice,
                     custom_schema)
        col.error = gr.Markdown(elem_classes=["variant-error"], elem_id=f"error-{i}")
        col.metrics = gr.Markdown("", elem_id=f"metrics-{i}")
        col.phases = gr.HTML("", elem_id=f"phases-{i}")
        col.badge = gr.Markdown("", elem_id=f"badge-{i}")
        col.answer = gr.Textbox(label=f"answer {i + 1}", lines=6, max_lines=12,
                                interactive=False, elem_id=f"answer-{i}")
        with gr.Accordion("reasoning", open=False):
            col.reasoning = gr.Textbox(label=f"reasoning {i + 1}", lines=4, max_lines=10,
                                       interactive=False)
        with gr.Accordion("View code", open=False):
            col.code_py = gr.Code(language="python", label=f"openai SDK {i + 1}",
                                  interactive=False, elem_id=f"code-py-{i}")
            col.code_curl = gr.Code(language="shell", label=f"curl {i + 1}", interactive=False,
                                    elem_id=f"code-curl-{i}")
    return col


def _controls_values(name: str, vals: list[Any]) -> Controls:
    return Controls(name, *vals)


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
        columns = [_column(i, ctx) for i in range(MAX_COLUMNS)]
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
    def do_connect(url: str, key: str) -> dict[Any, Any]:
        if ctx.replay_only and url == ctx.settings.base_url:
            return {server_status: "▶️ **Replay mode**: no vLLM server is configured here, "
                    "so the playground replays recorded comparisons (open *Replay a "
                    "recording* below). Set PLAYGROUND_BASE_URL to a server to run live.",
                    model: gr.update(choices=[], value=None)}
        try:
            info = fetch_server_info(url, key or ctx.settings.api_key_value())
        except PlaygroundError as e:
            return {server_status: f"❌ {e}", model: gr.update(choices=[], value=None)}
        names = [m.id for m in info.models]
        lens = ", ".join(f"{m.id} (max_model_len {m.max_model_len})" for m in info.models)
        text = (f"✅ vLLM **{info.version}** at `{url}` · healthy: {info.healthy} · "
                f"models: {lens}")
        note = model_note(info)
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
        _wire_column(c, ctx, base_url, model)

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
        model_name = data[model]
        try:
            info = fetch_server_info(url, key)
            model_name = model_name or (info.models[0].id if info.models else None)
        except PlaygroundError as e:
            gr.Warning(str(e))
            yield {**cleared, **{c.error: f"❌ {e}" for c in columns[:n]}}
            return
        limit = next((m.max_model_len for m in info.models if m.id == model_name), None)
        recs: list[Recording] = []
        slots: list[Column] = []
        for i, c in enumerate(columns[:n]):
            vals = [data[x] for x in c.controls()]
            try:
                v = variant_from_controls(_controls_values(data[c.preset] or f"variant-{i + 1}",
                                                           vals), ctx.library)
                await asyncio.to_thread(preflight, url, key, model_name or "", limit, v, text)
            except ValidationFailed as e:
                cleared[c.error] = f"❌ **not sent** -- {e}"
                continue
            req = request.build(v, text, model_name or "")
            recs.append(new_recording(v, req, url))
            slots.append(c)
            cleared[c.code_py] = request.python_snippet(req, url)
            cleared[c.code_curl] = request.curl_snippet(req, url)
        yield cleared
        if not recs:
            return
        pool = ctx.pool(key)
        run_mode = "sequential" if str(data[mode]).startswith("sequential") else "concurrent"
        try:
            work = run_to_end(pool, recs, mode=run_mode, timeout_s=ctx.settings.timeout_s)
            floor_ms = await asyncio.to_thread(ctx.floor_ms, url, key)
            async for update in live_updates(ctx, work, recs, slots, timeline, bars,
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
        sess.last = [recording_dict(r) for r in recs]
        final = column_updates(slots, recs, floor_ms)
        final.update({timeline: plots.timeline(recs, floor_ms), bars: plots.latency_bars(recs),
                      history_plot: plots.history(sess.history),
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
            v = variant_from_controls(_controls_values(data[save_name].strip(),
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


async def live_updates(ctx: UIContext, work: Any, recs: Sequence[Recording],
                       slots: list[Column], timeline: Any, bars: Any,
                       floor_ms: float | None = None):
    """Run `work` (a coroutine that fills `recs`: live requests or a replay) on the measuring
    loop (own thread) and yield sampled UI updates; this loop only reads the recordings."""
    future = ctx.measure.submit(work)
    driver = asyncio.wrap_future(future)
    seen = [-1] * len(recs)
    # First figures only after PLOT_INTERVAL_S: the first tokens' text must not queue behind
    # two plotly renders in the browser.
    last_plot = time.perf_counter()
    try:
        while True:
            done = driver.done()
            changed = [i for i, r in enumerate(recs) if r.events != seen[i]]
            if changed or done:
                for i in changed:
                    seen[i] = recs[i].events
                update = column_updates([slots[i] for i in changed], [recs[i] for i in changed],
                                        floor_ms)
                now = time.perf_counter()
                if done or now - last_plot >= PLOT_INTERVAL_S:
                    last_plot = now
                    update[timeline] = plots.timeline(recs, floor_ms)
                    update[bars] = plots.latency_bars(recs)
                yield update
            if done:
                return
            await asyncio.wait({driver}, timeout=TEXT_INTERVAL_S)
    finally:
        if not future.done():  # Stop pressed / browser gone: cancel -> streams close -> abort
            future.cancel()
            while not all(r.finished for r in recs):  # bounded by the runner's own cleanup
                await asyncio.sleep(0.01)
        await asyncio.gather(driver, return_exceptions=True)


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 1)


def column_updates(slots: list[Column], recs: Any, floor_ms: float | None = None
                   ) -> dict[Any, Any]:
    now = time.perf_counter()
    out: dict[Any, Any] = {}
    for c, rec in zip(slots, recs, strict=True):
        out[c.answer] = rec.content
        out[c.reasoning] = rec.reasoning
        out[c.metrics] = metrics_md(rec, now, floor_ms)
        out[c.phases] = phases_html(rec) if rec.finished else ""
        out[c.badge] = badge_md(rec)
        out[c.error] = error_md(rec)
    return out


def _wire_column(c: Column, ctx: UIContext, base_url: Any, model: Any) -> None:
    def load_preset(name: str) -> list[Any]:
        v = ctx.library.get(name)
        k = controls_from_variant(v)
        return [k.stream, k.thinking, k.temperature, k.top_p, k.top_k, k.seed, k.max_tokens,
                k.ignore_eos, k.prompt_choice,
                gr.update(value=k.custom_prompt, visible=k.prompt_choice == CUSTOM),
                k.schema_choice,
                gr.update(value=k.custom_schema if k.schema_choice == CUSTOM else "",
                          visible=k.schema_choice == CUSTOM)]

    c.preset.input(load_preset, c.preset, c.controls(), api_name=False)
    c.prompt_choice.change(lambda p: gr.update(visible=p == CUSTOM), c.prompt_choice,
                           c.custom_prompt, api_name=False)
    c.schema_choice.change(lambda s: gr.update(visible=s == CUSTOM), c.schema_choice,
                           c.custom_schema, api_name=False)

    def show_code(name: str, url: str, model_name: str | None, *vals: Any) -> list[str]:
        try:
            v = variant_from_controls(_controls_values(name or "variant", list(vals)),
                                      ctx.library)
        except ValidationFailed as e:
            return [f"# fix this first: {e}", f"# fix this first: {e}"]
        req = request.build(v, "<your prompt>", model_name or "Qwen/Qwen3-0.6B")
        return [request.python_snippet(req, url), request.curl_snippet(req, url)]

    gr.on([x.change for x in [c.preset, *c.controls()]] + [model.change], show_code,
          [c.preset, base_url, model, *c.controls()], [c.code_py, c.code_curl],
          api_name=False, show_progress="hidden")

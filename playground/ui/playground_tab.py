"""The Playground tab: connection, 2-4 variant columns, one prompt, live output and plots.

Run and Stop are the stage's own buttons (ui/run_route): the controls hand their values to the
app as they change (`sync`), a click starts the run through the app's own route, and the
finished results come back through one Gradio event (`handover`) when the run ends."""

from __future__ import annotations

import asyncio
from html import escape
from typing import Any

import gradio as gr

from playground.core.compare import prepare
from playground.core.preflight import MAX_PROMPT_CHARS, check_prompt
from playground.core.runner import run_to_end
from playground.errors import PlaygroundError, ValidationFailed
from playground.outputs.fmt import demo_notice, md_text
from playground.ui import ids, ladder_panel, replay_panel
from playground.ui.column_view import column, follow_writes, read_variant, wire_column
from playground.ui.columns import MAX_COLUMNS, columns_asked
from playground.ui.context import REPLAY_ONLY, UIContext, owner_of
from playground.ui.run_route import SYNC_JS, Plan
from playground.ui.stage import Session, Shown, Stage, record_history, stage_buttons

PRESENTER_JS = "() => window.qllPresenter && window.qllPresenter()"  # static/live.js


def build(ctx: UIContext, demo: gr.Blocks) -> gr.Markdown:
    """Lay out the tab inside the current gr.Blocks and wire its events; returns the page's
    connection line (the Server tab repeats it)."""
    session = gr.State(Session())
    with gr.Accordion("Server connection", open=False, elem_classes=["pv-hide"]), gr.Row():
        base_url = gr.Textbox(ctx.settings.base_url, label="base URL", scale=3)
        api_key = gr.Textbox("", label="API key (optional; never shown again)",
                             type="password", scale=2)
        model = gr.Dropdown([], label="model", allow_custom_value=True, scale=2)
        connect = gr.Button("Connect", scale=1)
    server_status = gr.Markdown("_connecting…_", elem_id=ids.CONNECTION,
                                elem_classes=["pv-hide"])
    warm_status = gr.Markdown(ctx.warm.text(), elem_id="warmup-status")
    warm_timer = gr.Timer(1.0, active=ctx.warm.warming)
    if ctx.library.errors:
        gr.Markdown("⚠️ Skipped bad preset files (the good ones are loaded):\n"
                    + "\n".join(f"- {md_text(e)}" for e in ctx.library.errors),
                    elem_id="bad-presets")

    prompt = gr.Textbox(ctx.examples[0] if ctx.examples else "", label="prompt", lines=2,
                        max_length=MAX_PROMPT_CHARS, elem_id=ids.PROMPT)
    if ctx.examples:
        with gr.Column(elem_classes=["pv-hide"]):
            gr.Examples([[e] for e in ctx.examples[:8]], inputs=[prompt],
                        label="address examples")
    with gr.Row():
        n_columns = gr.Slider(2, MAX_COLUMNS, 2, step=1, label="variants", scale=2)
        mode = gr.Radio(["concurrent", "sequential (fair)"], value="concurrent",
                        label="run mode", scale=2)
        show_reasoning = gr.Checkbox(False, label="show reasoning", scale=1,
                                     elem_id="show-reasoning",
                                     info="opens every reasoning panel; the headline then "
                                     "counts reasoning as visible (off: the first answer "
                                     "character)")
        # the stage's buttons: plain buttons the page script sends straight to the app
        gr.HTML(stage_buttons(REPLAY_ONLY if ctx.replay_only else ""), scale=1, padding=False)
        handover = gr.Button("hand over", elem_id=ids.HANDOVER, elem_classes=["stage-hidden"])
        presenter = gr.Button("Presenter view", scale=1, elem_id=ids.PRESENTER_TOGGLE)
    quick = gr.Row(visible=ctx.replay_only, elem_id="quick-replays")  # replay mode: Run's place
    # Written by the live feed only (never a Gradio value, so Gradio never redraws them).
    gr.HTML(f'<div id="{ids.HEADLINE}"></div>', elem_id="headline")
    token = gr.Textbox("", visible=False)
    with gr.Row(equal_height=False):
        columns = [column(i, ctx) for i in range(MAX_COLUMNS)]
    gr.HTML(f'<div class="plot-title">token timeline</div><div id="{ids.TIMELINE}"></div>'
            f'<div class="plot-title">latency</div><div id="{ids.BARS}"></div>',
            elem_id="live-plots")
    with gr.Accordion("This session's history", open=False, elem_id="history-panel"):
        history_plot = gr.HTML("", elem_id="history-plot")
        history_table = gr.Dataframe(headers=["run", "variant", "ttft_ms", "e2e_ms", "tokens"],
                                     interactive=False, elem_id="history-table")
    stage = Stage(columns, history_plot, history_table, token, feeds=ctx.feeds,
                  slots=ctx.slots)
    view = ladder_panel.build(ctx, stage, session, n_columns, prompt, base_url, api_key, model)
    replays, refresh_replays = replay_panel.build(ctx, stage, n_columns, prompt, session, view,
                                                  quick, open_=ctx.replay_only)
    with gr.Accordion("Save columns as a preset", open=False, elem_classes=["pv-hide"]):
        with gr.Row():
            save_col = gr.Dropdown([str(i + 1) for i in range(MAX_COLUMNS)], value="1",
                                   label="column")
            save_name = gr.Textbox(label="preset name (letters, digits, - _ .)")
            save_btn = gr.Button("Save")
        save_status = gr.Markdown(elem_id="save-status")

    # --- connection ------------------------------------------------------------------------
    async def do_connect(url: str, key: str) -> dict[Any, Any]:
        if ctx.replay_only and url == ctx.settings.base_url:
            return {server_status: "▶️ **Replay mode**: no vLLM server is configured here, "
                    "so the playground replays recorded comparisons (open *Replay a "
                    "recording* below). Set PLAYGROUND_BASE_URL to a server to run live.",
                    model: gr.update(choices=[], value=None)}
        try:
            url, key = ctx.connection(url, key)
            info = await ctx.server_info(url, key)
        except PlaygroundError as e:
            return {server_status: f"❌ {md_text(e)}", model: gr.update(choices=[], value=None)}
        names = [m.id for m in info.models]
        lens = ", ".join(f"{md_text(m.id, 120)} (max_model_len {md_text(m.max_model_len)})"
                         for m in info.models)
        text = (f"✅ vLLM **{md_text(info.version, 40)}** at {md_text(url)} · healthy: "
                f"{info.healthy} · "
                f"models: {lens}")
        note = demo_notice(info)
        if note and note != ctx.banner:  # the page banner already says it for this server
            text += f"\n\n⚠️ {note}"
        return {server_status: text, model: gr.update(choices=names,
                                                      value=names[0] if names else None)}

    async def on_connect(url: str, key: str, sess: Session) -> dict[Any, Any]:
        sess.connects += 1
        return await do_connect(url, key)

    async def on_load(url: str, key: str, sess: Session) -> dict[Any, Any]:
        """The page-load check of the default server: any Connect wins (Session)."""
        out = await do_connect(url, key)
        if not sess.load_check_may_show():
            return {server_status: gr.skip(), model: gr.skip()}
        return out

    connect.click(on_connect, [base_url, api_key, session], [server_status, model],
                  api_name=False)
    demo.load(on_load, [base_url, api_key, session], [server_status, model], api_name=False)

    # --- columns ----------------------------------------------------------------------------
    n_columns.change(lambda n: [gr.update(visible=i < int(n)) for i in range(MAX_COLUMNS)],
                     n_columns, [c.box for c in columns], api_name=False)
    for i, c in enumerate(columns):
        stage.writes.append(wire_column(i, c, ctx, base_url, model))

    # --- run ----------------------------------------------------------------------------------
    show_reasoning.change(lambda on: [gr.update(open=bool(on)) for _ in columns],
                          show_reasoning, [c.reasoning_panel for c in columns],
                          api_name=False, show_progress="hidden")
    run_inputs = [base_url, api_key, model, prompt, n_columns, mode, show_reasoning]
    for c in columns:
        run_inputs += [c.preset, *c.controls()]
    per_column = 1 + len(columns[0].controls())

    async def sync(request: gr.Request, handle: str, sess: Session, *values: Any) -> None:
        """The page's plan: what a click on Run would run now (ui/run_route)."""
        await ctx.plans.put(handle, list(values), sess, owner_of(request))

    handed = [token, session, *run_inputs]  # (hand-overs are few: docs/architecture.md)
    settings = [base_url, api_key, model, n_columns, mode, show_reasoning]
    edits = [x.input for c in columns for x in c.controls()]
    gr.on([x.change for x in settings] + edits, sync, handed, None, api_name=False, js=SYNC_JS,
          queue=False, show_progress="hidden", trigger_mode="multiple", preprocess=False)
    demo.load(sync, handed, None, api_name=False, js=SYNC_JS, queue=False,
              show_progress="hidden", preprocess=False)
    follow_writes(stage.writes, ctx, columns, base_url, model, sync, handed, SYNC_JS)

    async def start_run(plan: Plan, tok: str, who: str) -> str | None:
        """Start the page's plan (the run route's click); None, or why it did not start."""
        sess = plan.session
        if sess.active is not None or (sess.task is not None and not sess.task.done()):
            return "a run is already in progress in this tab: Stop it first"
        frame = stage.frame(tok)
        if frame.feed is None or frame.feed.channel is None:  # its end could not reach it
            return "too many pages follow runs on this app right now: try again in a moment"
        sess.handover, sess.warning = None, ""
        frame.feed.handover = True  # its end says: press the hand-over button
        sess.task = asyncio.create_task(run_plan(plan, frame, who))
        return None

    async def run_plan(plan: Plan, frame: Any, who: str) -> None:
        sess = plan.session
        busy = ctx.slots.take(who)  # before any work: the server's tokenizer, the floor probe
        try:
            frame.metrics = [f"❌ **busy**: {busy}"] * len(frame.metrics) if busy else frame.metrics
            sess.handover = frame.values() if busy else await play_plan(plan, frame, who)
        except Exception as e:  # said on the page, never lost silently
            sess.warning = f"the run failed: {e}"
            sess.handover = frame.ended()
        finally:
            if not busy:
                ctx.slots.give(who)
            if frame.feed is not None:
                frame.feed.finish()

    async def play_plan(plan: Plan, frame: Any, who: str) -> list[str]:
        sess = plan.session
        url, key, model_name, text, n_cols, run_mode, reasoning_shown, *cols = plan.values
        if frame.feed is not None:  # the headline counts what the page shows
            frame.feed.show_reasoning = reasoning_shown is True or reasoning_shown == "true"
        n = columns_asked(n_cols)  # 2-4; anything else is named in every column
        text = plan.prompt if plan.prompt is not None else text or ""
        shown = Shown("run", url=str(url), cold=ctx.warm.warming)
        sess.shown = shown
        try:  # the page cleared the columns at the click; nothing to send yet
            url, key = ctx.connection(url, key)
            shown.url = url
            check_prompt(text)
            columns_asked(n_cols, strict=True)
        except ValidationFailed as e:  # said where the user looks: the toast and each column
            sess.warning = str(e)
            shown.errors = {i: f"❌ **not sent** -- {md_text(e)}" for i in range(n)}
            return frame.ended()
        variants: list[Any] = []
        for i in range(n):
            preset, *vals = cols[i * per_column:(i + 1) * per_column]
            try:
                variants.append(read_variant(ctx, preset, vals))
            except ValidationFailed as e:
                variants.append(e)
        chosen = [v for v in variants if not isinstance(v, ValidationFailed)]
        try:
            prepared = await prepare(url, key, model_name or None, chosen, text, port=ctx.port)
        except PlaygroundError as e:  # the prompt, the model, the server: nothing is sent
            sess.warning = str(e)
            why = (f"❌ **not sent** -- {md_text(e)}" if isinstance(e, ValidationFailed)
                   else f"❌ {md_text(e)}")
            shown.errors = {i: why for i in range(n)}
            return frame.ended()
        outcomes = iter(prepared.slots)
        for i, v in enumerate(variants):
            got = v if isinstance(v, ValidationFailed) else next(outcomes)
            if isinstance(got, ValidationFailed):
                shown.errors[i] = f"❌ **not sent** -- {md_text(got)}"
                continue
            shown.recs.append(got)
            shown.where.append(i)
        if not shown.recs:
            return frame.ended()
        mode_ = "sequential" if str(run_mode).startswith("sequential") else "concurrent"
        shown.floor_ms = await asyncio.to_thread(ctx.floor_ms, url, key)
        work = run_to_end(ctx.pool(key), shown.recs, mode=mode_,
                          timeout_s=ctx.settings.timeout_s)
        log = ctx.run_log(shown.recs, plan.owner)
        try:
            values = await stage.play(sess, shown, work, ctx.measure, frame, log, who=who,
                                      reserved=True)
        finally:  # also on Stop: finished and partial (marked cancelled) results are kept
            ctx.close_log(log)
        record_history(sess, shown.recs)
        return values

    ctx.start_run = start_run

    async def do_handover(sess: Session) -> list[Any]:
        """The finished run's columns, once (the page pressed the hidden button at its end)."""
        task = sess.task
        if task is not None and not task.done():
            await asyncio.wait({task}, timeout=60)
        if sess.warning:
            gr.Warning(escape(sess.warning))
            sess.warning = ""
        values, sess.handover = sess.handover, None
        return values if values is not None else [gr.skip()] * len(stage.live_outputs())

    handover.click(do_handover, session, stage.live_outputs(), api_name=False,
                   preprocess=False, postprocess=False, show_progress="hidden", queue=False
                   ).then(stage.final_values, session, stage.final_outputs(), api_name=False,
                          show_progress="hidden"
                          ).then(refresh_replays, None, replays, api_name=False,
                                 show_progress="hidden")
    presenter.click(None, None, None, js=PRESENTER_JS, api_name=False)

    def warm_tick() -> list[Any]:
        return [ctx.warm.text(), gr.Timer(active=ctx.warm.warming)]

    warm_timer.tick(warm_tick, None, [warm_status, warm_timer], api_name=False,
                    show_progress="hidden")
    demo.load(warm_tick, None, [warm_status, warm_timer], api_name=False)

    # --- save preset --------------------------------------------------------------------------
    save_inputs = {save_col, save_name, session, *run_inputs}  # every column's preset, controls

    def do_save(data: dict[Any, Any], request: gr.Request) -> dict[Any, Any]:
        c = columns[int(data[save_col]) - 1]
        sess: Session = data[session]
        name = str(data[save_name] or "").strip()
        try:
            if not name:
                raise ValidationFailed("preset name", "is empty -- type a name (letters, "
                                       "digits, - _ .)")
            # the column as it stands (its controls over its preset), under the new name
            v = read_variant(ctx, data[c.preset], [data[x] for x in c.controls()], name=name)
            if not (again := v.name in sess.saved):  # a new one counts (shared: capped)
                ctx.count_save(request)
            path = ctx.library.save_user_variant(v, overwrite=again)
        except ValidationFailed as e:
            return {save_status: f"❌ {md_text(e)}"}
        sess.saved.add(v.name)
        names = sorted(ctx.library.variants)
        note = " -- replaces your earlier save" if again else ""
        return {save_status: f"✅ saved as `{v.name}` ({path.name}){note}",
                **{col.preset: gr.update(choices=names) for col in columns}}

    save_btn.click(do_save, save_inputs, [save_status, *[c.preset for c in columns]],
                   api_name=False)
    return server_status

"""The ladder inside the Playground tab: one click plays an article's table of optimizations
live, one step per column, one step after another, then draws what each step saved and where
each step's time went. A played ladder can be saved as a recording; replaying it (e.g. on a
Space with no server) draws the same view."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from html import escape
from typing import Any

import gradio as gr

from playground.core.compare import prepare
from playground.core.runner import run_to_end
from playground.errors import PlaygroundError
from playground.lab import ladder as lad
from playground.lab.replay import from_history, save
from playground.outputs import figures
from playground.outputs.fmt import md_text, ms
from playground.specs.ladders import Ladder, ladder_names, load_ladder, step_variants
from playground.ui.column_view import column_title, control_values
from playground.ui.context import UIContext, owner_of
from playground.ui.live_feed import FOLLOW_JS
from playground.ui.stage import Session, Shown, Stage, record_history


def change_html(saved_ms: float | None) -> str:
    """What a step did to the first visible character, in words and in the colour of its sign
    (green faster, red slower): "1,731 ms slower", never a "+" in a column named "saved"."""
    if saved_ms is None:
        return "-"
    if abs(saved_ms) < 0.5:
        return "<span class='ladder-same'>no change</span>"
    word, cls = ("faster", "ladder-faster") if saved_ms > 0 else ("slower", "ladder-slower")
    return f"<span class='{cls}'>{ms(abs(saved_ms))} {word}</span>"


def table_html(ladder: Ladder, step_rows: list[lad.StepRow]) -> str:
    """The article's table as it ran: one row per step, each value in its own column (a step
    that did not run keeps its reason in the measured columns and its article numbers in
    theirs), and the caveat that each step is one sample."""
    head = ("<tr><th>step</th><th>first visible (answer) character</th><th>E2E</th>"
            "<th>vs the step before</th><th>article P50 (P95)</th><th>JSON valid</th>"
            "</tr>")
    body = []
    for r, step in zip(step_rows, ladder.steps, strict=True):
        art = "-" if r.article_p50_ms is None else ms(r.article_p50_ms) + (
            f" ({ms(step.article_p95_ms)})" if step.article_p95_ms else "")
        if r.status != "measured":
            body.append(f"<tr><td>{escape(r.label)}</td><td colspan='3'>"
                        f"<em>{escape(r.status)}</em></td><td>{art}</td><td>-</td></tr>")
            continue
        valid = "-" if r.json_valid is None else ("yes" if r.json_valid else "no")
        body.append(f"<tr><td>{escape(r.label)}</td><td><b>{ms(r.visible_ms)}</b></td>"
                    f"<td>{ms(r.e2e_ms)}</td><td>{change_html(r.saved_ms)}</td><td>{art}</td>"
                    f"<td>{valid}</td></tr>")
    caveat = ("<p class='ladder-caveat'><em>One sample per step</em> (one request each, "
              "played one after another): a difference between two steps carries no "
              "interval and can be this machine's noise -- two steps that generate the same "
              "number of tokens can differ by seconds on a busy CPU. For intervals, run the "
              "same steps as an experiment in the Benchmark tab (interleaved, repeated).</p>")
    return (f"<p><b>{escape(ladder.title)}</b></p><table class='ladder-table'>{head}"
            f"{''.join(body)}</table>{caveat}")


def step_titles(ladder: Ladder) -> dict[int, str]:
    """Each column's card and title: the step it plays."""
    return {i: step.label for i, step in enumerate(ladder.steps)}


def ladder_view(ctx: UIContext, sess: Session) -> list[Any]:
    shown = sess.shown
    if shown is None or shown.ladder is None or shown.ladder_slots is None:
        return [gr.skip(), gr.skip()]
    try:
        ladder = load_ladder(ctx.settings.presets_dir, shown.ladder)
    except PlaygroundError as e:
        return [f"❌ {escape(str(e))}", gr.skip()]
    step_rows = lad.rows(ladder, shown.ladder_slots)
    return [table_html(ladder, step_rows), figures.ladder(step_rows)]


def build(ctx: UIContext, stage: Stage, session: Any, n_columns: Any, prompt: Any,
          base_url: Any, api_key: Any, model: Any
          ) -> tuple[list[Any], Callable[[Session], list[Any]]]:
    """Lay out the panel; returns the ladder view's outputs and how to draw them (a replayed
    ladder recording draws the same view)."""
    names = ladder_names(ctx.settings.presets_dir)
    with gr.Accordion("Ladder: an article's table, played live", open=False,
                      elem_id="ladder-panel"):
        with gr.Row():
            pick = gr.Dropdown(names, value=names[0] if names else None,
                               label="ladder (presets/ladders)",
                               scale=3, elem_id="ladder-pick")
            play_btn = gr.Button("Play ladder", variant="primary", scale=1,
                                 elem_id="ladder-play", interactive=not ctx.replay_only)
            save_btn = gr.Button("Save ladder as a recording", scale=1)
        table = gr.HTML("", elem_id="ladder-table")
        plot = gr.Plot(label="what each step saved", elem_id="ladder-plot")
        saved_file = gr.File(label="ladder recording", interactive=False)

    async def do_head(name: str | None, text: str, url: str, key: str, model_name: str | None,
                      sess: Session) -> list[Any]:
        if sess.active is not None:
            raise gr.Error("a run is already in progress in this tab: Stop it first")
        try:
            ladder = load_ladder(ctx.settings.presets_dir, name or "")
            url, key = ctx.connection(url, key)
            steps = lad.plan(ladder, ctx.settings.presets_dir, ctx.transformers_url())
            checked = await prepare(url, key, model_name or None,
                                    [v for v in steps if not isinstance(v, str)], text,
                                    port=ctx.port)
        except PlaygroundError as e:
            raise gr.Error(escape(str(e))) from None
        bad = checked.first_error()
        if bad is not None:
            raise gr.Error(escape(str(bad)))
        slots = lad.fill(steps, checked.recordings)
        sess.pending = (ladder, slots, url.strip(), key)
        return [len(ladder.steps), f"▶️ playing <b>{escape(ladder.title)}</b> step by step…",
                *shown_steps(ladder)]

    def shown_steps(ladder: Ladder) -> list[Any]:
        """Each column's title and controls: the step it plays (what ran, not the presets)."""
        variants = step_variants(ladder, ctx.settings.presets_dir)
        out: list[Any] = []
        for i, c in enumerate(stage.columns):
            if i < len(variants):
                out += [column_title(i, ladder.steps[i].label),
                        *control_values(variants[i], ctx.library)]
            else:
                out += [gr.skip()] * (1 + len(c.controls()))
        return out

    async def do_play(tok: str, sess: Session, request: gr.Request) -> list[Any]:
        if sess.pending is None or not isinstance(sess.pending[0], Ladder):
            return [gr.skip()] * len(stage.live_outputs())
        ladder, slots, url, key = sess.pending
        sess.pending = None
        shown = Shown("ladder", url=url, cold=ctx.warm.warming, ladder=ladder.name,
                      ladder_slots=slots, titles=step_titles(ladder))
        frame = stage.frame(tok)
        for i, s in enumerate(slots):
            if isinstance(s, str):
                shown.errors[i] = f"⏭️ **{md_text(ladder.steps[i].label)}** -- {md_text(s)}"
            else:
                shown.recs.append(s)
                shown.where.append(i)
        shown.floor_ms = await asyncio.to_thread(ctx.floor_ms, url, key)
        work = run_to_end(ctx.pool(key), shown.recs, mode="sequential",
                          timeout_s=ctx.settings.timeout_s)
        log = ctx.run_log(shown.recs, owner_of(request))
        try:
            values = await stage.play(sess, shown, work, ctx.measure, frame, log,
                                      who=ctx.visitor(request))
        finally:
            ctx.close_log(log)
        record_history(sess, shown.recs)
        return values

    ev = play_btn.click(do_head, [pick, prompt, base_url, api_key, model, session],
                        [n_columns, table, *[x for c in stage.columns
                                             for x in (c.title, *c.controls())]],
                        api_name=False)
    stage.writes.append(ev)  # the steps' controls: the plan and View code follow them
    ev.success(do_play, [stage.token, session], stage.live_outputs(), api_name=False,
               preprocess=False, postprocess=False, show_progress="hidden", js=FOLLOW_JS,
               queue=False
               ).then(stage.final_values, session, stage.final_outputs(), api_name=False,
                      show_progress="hidden"
                      ).then(lambda s: ladder_view(ctx, s), session, [table, plot],
                             api_name=False, show_progress="hidden")

    def do_save(sess: Session, request: gr.Request) -> str:
        shown = sess.shown
        if shown is None or shown.kind != "ladder" or not sess.last:
            raise gr.Error("nothing to save yet: play a ladder first")
        env = lad.environment(shown.ladder or "", shown.ladder_slots or [])
        if ctx.server_note:
            env["note"] = ctx.server_note
        rec = from_history(sess.last, title=f"ladder {shown.ladder} "
                           f"{time.strftime('%Y-%m-%d %H:%M')}", environment=env)
        return str(save(rec, ctx.settings.runs_dir / "recordings"
                        / f"ladder-{time.strftime('%Y%m%d-%H%M%S')}-{owner_of(request)}.json"))

    save_btn.click(do_save, session, saved_file, api_name=False)
    return [table, plot], lambda s: ladder_view(ctx, s)

"""Replay inside the Playground tab: load a recording (shipped, a past run, or an upload) and
re-stream every column at its recorded pace, with no server. Also: save the last run."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from html import escape, unescape
from pathlib import Path
from typing import Any

import gradio as gr

from playground.errors import PlaygroundError
from playground.lab.ladder import from_environment
from playground.lab.replay import (
    MAX_BYTES,
    RecordingFile,
    from_history,
    load,
    play,
    recordings,
    save,
)
from playground.lab.store import RunStore
from playground.outputs.fmt import DEMO_NOTICE, md_text
from playground.specs.ladders import load_ladder
from playground.ui.context import UIContext, owner_of
from playground.ui.ladder_panel import step_titles
from playground.ui.live_feed import FOLLOW_JS
from playground.ui.stage import Session, Shown, Stage

SHARED_REPLAY_S = 180.0  # the longest replay a visitor may play on a shared page


def replay_refused(shared: bool, rate: float, recorded_s: float) -> str:
    """Why a visitor may not play this replay here ("" when they may): on a shared page a
    replay holds one of the app's run slots while it plays, so it runs at 1x or faster and
    for at most SHARED_REPLAY_S."""
    if not shared:
        return ""
    if rate < 1:
        return (f"speed: {rate:g}x -- on a shared page replays run at 1x or faster (each "
                "holds one of the app's run slots while it plays)")
    if recorded_s / rate > SHARED_REPLAY_S:
        return (f"recording: plays {recorded_s / rate:.0f} s at {rate:g}x; on a shared page "
                f"a replay may take at most {SHARED_REPLAY_S:.0f} s -- raise the speed")
    return ""


def recording_choices(ctx: UIContext, owner: str = "") -> list[str]:
    """The shipped recordings, then this visitor's own saved recordings and last 20 runs
    (every visitor's with `--all-runs`): on a shared page nobody replays another's prompt."""
    # GPU recordings first (the default a CPU-only Space shows), the CPU demo's after them
    shipped = sorted((ctx.settings.presets_dir / "recordings").glob("*.json"),
                     key=lambda p: (p.name.startswith("cpu-"), p.name))
    listed = ctx.listed(owner)
    saved = [] if listed == "" else sorted(
        (ctx.settings.runs_dir / "recordings").glob("*.json" if listed is None
                                                    else f"*-{listed}.json"), reverse=True)
    runs = [] if listed == "" else RunStore(ctx.settings.runs_dir).list_runs(
        "playground", listed)[:20]
    return [str(p) for p in [*shipped, *saved, *runs]]


def replay_label(rec: RecordingFile) -> str:
    """"replay of <recording> (<machine>, <date>)": what every number of a replay carries."""
    machine = str(rec.environment.get("accelerator") or "machine not recorded")
    machine = "CPU only" if machine.startswith("none") else machine.split(" (")[0]
    when = (rec.created or "date not recorded")[:10]
    return f"replay of {rec.title[:120]} ({machine[:60]}, {when})"


def build(ctx: UIContext, stage: Stage, n_columns: Any, prompt: Any, session: Any,
          ladder_view: tuple[list[Any], Callable[[Session], list[Any]]], quick: Any, *,
          open_: bool = False) -> tuple[Any, Callable[..., Any]]:
    """Lay out the panel (and, inside `quick`, one button per shipped recording: replay mode
    shows them where Run would be); returns the recording list and the handler that refreshes
    it with the visitor's own runs (chained after each run)."""
    columns = stage.columns
    choices = recording_choices(ctx)
    with gr.Accordion("Replay a recording (no server needed)", open=open_,
                      elem_id="replay-panel"):
        with gr.Row():
            pick = gr.Dropdown(choices, value=choices[0] if choices else None,
                               label="recording (presets/recordings, saved, past runs)",
                               scale=4, elem_id="replay-pick")
            upload = gr.File(label=f"or upload (.json / .jsonl, max {MAX_BYTES // 2**20} MiB)",
                             file_types=[".json", ".jsonl"], type="filepath", scale=2)
            speed = gr.Slider(0.25, 4, 1, step=0.25, label="speed", scale=1,
                              elem_id="replay-speed")
        with gr.Row():
            replay_btn = gr.Button("Replay", variant="primary", elem_id="replay-run")
            stop_btn = gr.Button("Stop replay", variant="stop")
            save_btn = gr.Button("Save last run as a recording")
        info = gr.Markdown("", elem_id="replay-info")
        saved_file = gr.File(label="recording", interactive=False)

    head_outputs = [info, n_columns, prompt, *[c.preset for c in columns]]

    def check(path: str | None, sess: Session, owner: str, uploaded: bool = False,
              rate: float = 1.0) -> RecordingFile:
        """The recording, or a gr.Error that names what is wrong with it. On a shared page a
        replay holds one of the app's slots for its whole length: visitors replay at 1x or
        faster, and for at most SHARED_REPLAY_S."""
        if not path:
            raise gr.Error("recording: pick one from the list or upload a file")
        if sess.active is not None:
            raise gr.Error("a run is already in progress in this tab: Stop it first")
        if not uploaded and path not in recording_choices(ctx, owner):
            raise gr.Error("recording: not one of yours -- pick one from the list")
        try:
            rec = load(Path(path))
        except PlaygroundError as e:
            raise gr.Error(escape(str(e))) from None
        if len(rec.columns) > len(columns):
            raise gr.Error(f"recording: has {len(rec.columns)} columns; the playground shows "
                           f"at most {len(columns)}")
        refused = replay_refused(ctx.shared, float(rate or 1),
                                 max((c.t_last or 0.0 for c in rec.columns), default=0.0))
        if refused:
            raise gr.Error(refused)
        return rec

    def do_head(choice: str | None, uploaded: str | None, rate: float, sess: Session,
                request: gr.Request) -> list[Any]:
        """Set up the columns (names, prompt, the note); `do_play`, chained on its success,
        plays the recording. A refusal is said in the panel's line: a gr.Error raised by an
        unqueued event reached the page as a bare "Error" (the refused 0.25x replay)."""
        try:
            rec = check(uploaded or choice, sess, owner_of(request), bool(uploaded), rate)
        except gr.Error as e:  # `do_play` checks again and plays nothing
            said = md_text(unescape(str(e.message)), 600)  # (gr.Error's text is HTML)
            return [f"❌ {said}", *[gr.skip()] * (len(head_outputs) - 1)]
        env = rec.environment
        where = ", ".join(f"{k}: {v}" for k, v in env.items() if k in (
            "accelerator", "vllm_version", "model", "server_flags", "note"))
        if env.get("demo_model"):
            where += f" · {DEMO_NOTICE}"
        names = set(ctx.library.variants)
        presets: list[Any] = [gr.skip()] * len(columns)
        for i, col in enumerate(rec.columns):
            if col.variant.get("name") in names:
                presets[i] = col.variant["name"]
        text = (f"▶️ **replaying** {md_text(rec.title, 200)} ({md_text(rec.created, 40)}) at "
                f"{rate:g}x -- recorded timings, no server involved. {md_text(where, 600)}")
        return [text, max(2, len(rec.columns)), rec.prompt, *presets]

    async def do_play(tok: str, choice: str | None, uploaded: str | None, rate: float,
                      sess: Session, request: gr.Request) -> list[Any]:
        try:  # (do_head showed the error; this is the session's own check, kept for the API)
            rec = check(uploaded or choice, sess, owner_of(request), bool(uploaded), rate)
        except gr.Error:
            return [gr.skip()] * len(stage.live_outputs())
        recs = recordings(rec)
        shown = Shown("replay", recs=recs, where=list(range(len(recs))),
                      floor_ms=rec.environment.get("floor_ms"), label=replay_label(rec))
        steps = from_environment(rec.environment, recs)
        if steps is not None:  # a played ladder: its skipped steps keep their columns
            shown.ladder, shown.ladder_slots = steps
            shown.where = [i for i, s in enumerate(steps[1]) if not isinstance(s, str)]
            shown.errors = {i: f"⏭️ {md_text(s)}" for i, s in enumerate(steps[1])
                            if isinstance(s, str)}
            # each card titled by its step (a ladder no longer shipped: its variants' names)
            with contextlib.suppress(PlaygroundError):
                shown.titles = step_titles(load_ladder(ctx.settings.presets_dir, steps[0]))
        frame = stage.frame(tok)
        return await stage.play(sess, shown, play(rec, recs, speed=float(rate)), ctx.measure,
                                frame, who=ctx.visitor(request))

    def ended(sess: Session, text: str) -> Any:
        """The panel's line, once the replay is over: it no longer says "replaying"."""
        shown = sess.shown
        if (shown is None or shown.kind != "replay" or not shown.label
                or "▶️ **replaying**" not in (text or "")):  # (a refusal stays as it is)
            return gr.skip()
        return (text.replace("▶️ **replaying**", "⏹ **replay ended**:", 1) + "\n\nEvery "
                "number on the page is recorded, not measured now; Run measures live.")

    def wire(listen: Callable[..., Any], source: Any) -> None:
        """The replay of what `pick` and `source` (the upload, or nothing) name, on `listen`:
        the head, then (on its success) the playback, the final values, the ladder's view, the
        end. Chained, not fired side by side: the playback marks the session busy, and a head
        that the queue answered after it refused its own replay ("a run is in progress")."""
        head = listen(do_head, [pick, source, speed, session], head_outputs, api_name=False,
                      queue=False)
        stage.writes.append(head)  # the recording's presets: the plan and View code follow
        head.success(do_play, [stage.token, pick, source, speed, session],
                     stage.live_outputs(), api_name=False,  # preprocessed: the upload's
                     postprocess=False, show_progress="hidden",  # path is checked by
                     js=FOLLOW_JS, queue=False  # Gradio, the pick against its choices
                     ).then(stage.final_values, session, stage.final_outputs(),
                            api_name=False, show_progress="hidden"
                            ).then(ladder_view[1], session, ladder_view[0], api_name=False,
                                   show_progress="hidden"
                                   ).then(ended, [session, info], info, api_name=False,
                                          show_progress="hidden")

    wire(replay_btn.click, upload)
    nothing = gr.State(None)
    with quick:  # one click each: the shipped recordings
        for path in [c for c in choices if Path(c).parent == ctx.settings.presets_dir
                     / "recordings"]:
            try:
                title = load(Path(path)).title
            except PlaygroundError:
                continue
            chosen = gr.Button(f"▶ {title}", size="sm", elem_classes=["quick-replay"])
            wire(chosen.click(lambda p=path: p, None, pick, api_name=False, queue=False).then,
                 nothing)
    stop_btn.click(lambda sess: sess.stop(), session, None, api_name=False, queue=False)

    def do_save(sess: Any, request: gr.Request) -> list[Any]:
        if not getattr(sess, "last", None):
            raise gr.Error("nothing to save yet: run a comparison first")
        rec = from_history(sess.last, title=f"comparison {time.strftime('%Y-%m-%d %H:%M')}",
                           environment={"note": ctx.server_note} if ctx.server_note else {})
        owner = owner_of(request)
        path = save(rec, ctx.settings.runs_dir / "recordings"
                    / f"{time.strftime('%Y%m%d-%H%M%S')}-{owner}.json")
        return [str(path), gr.update(choices=recording_choices(ctx, owner), value=str(path))]

    save_btn.click(do_save, session, [saved_file, pick], api_name=False)

    async def do_upload(path: str | None) -> str:
        """An upload is checked at once (size, nesting, fields), in a worker: the visitor
        learns what is wrong before pressing Replay."""
        if not path:
            return ""
        try:
            rec = await asyncio.to_thread(load, Path(path))
        except PlaygroundError as e:
            return f"❌ {md_text(e)}"
        return (f"✅ {md_text(Path(path).name)}: {len(rec.columns)} columns, "
                f"{md_text(rec.title, 200)} -- press Replay")

    upload.upload(do_upload, upload, info, api_name=False, show_progress="hidden")

    def refresh(request: gr.Request) -> Any:
        return gr.update(choices=recording_choices(ctx, owner_of(request)))

    return pick, refresh

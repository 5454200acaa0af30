"""Replay inside the Playground tab: load a recording (shipped, a past run, or an upload) and
re-stream every column at its recorded pace, with no server. Also: save the last run."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import gradio as gr

from playground.errors import PlaygroundError
from playground.lab.replay import MAX_BYTES, from_history, load, play, recordings, save
from playground.lab.store import RunStore
from playground.outputs.fmt import DEMO_NOTICE
from playground.ui.context import UIContext
from playground.ui.live import final_updates, live_updates


def recording_choices(ctx: UIContext) -> list[str]:
    # GPU recordings first (the default a CPU-only Space shows), the CPU demo's after them
    shipped = sorted((ctx.settings.presets_dir / "recordings").glob("*.json"),
                     key=lambda p: (p.name.startswith("cpu-"), p.name))
    saved = sorted((ctx.settings.runs_dir / "recordings").glob("*.json"), reverse=True)
    runs = RunStore(ctx.settings.runs_dir).list_runs("playground")[:20]
    return [str(p) for p in [*shipped, *saved, *runs]]


def build(ctx: UIContext, columns: list[Any], n_columns: Any, prompt: Any, timeline: Any,
          bars: Any, session: Any, *, open_: bool = False) -> None:
    choices = recording_choices(ctx)
    with gr.Accordion("Replay a recording (no server needed)", open=open_,
                      elem_id="replay-panel"):
        with gr.Row():
            pick = gr.Dropdown(choices, value=choices[0] if choices else None,
                               label="recording (presets/recordings, saved, past runs)",
                               scale=4, elem_id="replay-pick")
            upload = gr.File(label=f"or upload (.json / .jsonl, max {MAX_BYTES // 2**20} MiB)",
                             file_types=[".json", ".jsonl"], type="filepath", scale=2)
            speed = gr.Slider(0.25, 4, 1, step=0.25, label="speed", scale=1)
        with gr.Row():
            replay_btn = gr.Button("Replay", variant="primary", elem_id="replay-run")
            stop_btn = gr.Button("Stop replay", variant="stop")
            save_btn = gr.Button("Save last run as a recording")
        info = gr.Markdown("", elem_id="replay-info")
        saved_file = gr.File(label="recording", interactive=False)

    outputs = [info, n_columns, prompt, timeline, bars]
    for c in columns:
        outputs += [*c.outputs(), c.preset]

    async def do_replay(choice: str | None, uploaded: str | None, rate: float):
        path = uploaded or choice
        if not path:
            raise gr.Error("recording: pick one from the list or upload a file")
        try:
            rec = load(Path(path))
        except PlaygroundError as e:
            raise gr.Error(str(e)) from None
        n = len(rec.columns)
        if n > len(columns):
            raise gr.Error(f"recording: has {n} columns; the playground shows at most "
                           f"{len(columns)}")
        recs = recordings(rec)
        slots = columns[:n]
        env = rec.environment
        where = ", ".join(f"{k}: {v}" for k, v in env.items() if k in (
            "accelerator", "vllm_version", "model", "server_flags", "note"))
        if env.get("demo_model"):
            where += f" · {DEMO_NOTICE}"
        head: dict[Any, Any] = {
            info: f"▶️ **replaying** _{rec.title}_ ({rec.created}) at {rate:g}x -- recorded "
                  f"timings, no server involved. {where}",
            n_columns: max(2, n), prompt: rec.prompt}
        names = set(ctx.library.variants)
        for c, r in zip(columns, [*recs, *[None] * len(columns)], strict=False):
            head.update({c.answer: "", c.reasoning: "", c.badge: "", c.metrics: "",
                         c.error: "", c.phases: ""})
            if r is not None and r.variant.name in names:
                head[c.preset] = r.variant.name
        yield head
        floor_ms = env.get("floor_ms")
        async for update in live_updates(ctx.measure, play(rec, recs, speed=rate), recs,
                                         slots, timeline, bars, floor_ms):
            yield update
        yield final_updates(slots, recs, timeline, bars, floor_ms)

    ev = replay_btn.click(do_replay, [pick, upload, speed], outputs, api_name=False,
                          concurrency_limit=ctx.concurrency_limit, concurrency_id="runs")
    stop_btn.click(None, None, None, cancels=[ev], api_name=False)

    def do_save(sess: Any) -> list[Any]:
        if not getattr(sess, "last", None):
            raise gr.Error("nothing to save yet: run a comparison first")
        rec = from_history(sess.last, title=f"comparison {time.strftime('%Y-%m-%d %H:%M')}",
                           environment={"note": ctx.server_note} if ctx.server_note else {})
        path = save(rec, ctx.settings.runs_dir / "recordings"
                    / f"{time.strftime('%Y%m%d-%H%M%S')}.json")
        return [str(path), gr.update(choices=recording_choices(ctx), value=str(path))]

    save_btn.click(do_save, session, [saved_file, pick], api_name=False)

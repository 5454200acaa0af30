"""The stage: what the audience sees of a run in the Playground's columns, shared by Run, Replay
and the ladder.

A Run starts from the page through the app's own route (ui/run_route); a replay or a ladder
through its Gradio event. Either way the answers, reasoning, status lines, the presenter's
headline and the live timeline stream through the run's live feed (ui/live_feed), which the page
follows from the click; at the end the columns' final values are set once (a Run's by its
hand-over event), and a final event draws what is drawn once (badges, phase bars, errors, code,
history). Stop cancels the run on the measuring loop, so the run ends normally and the columns
show "stopped (partial output kept)".
"""

from __future__ import annotations

import asyncio
import html
import re
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import gradio as gr

from playground.core import request
from playground.core.record import RequestRecord
from playground.core.runner import Recording
from playground.core.warmup import cold_hint
from playground.outputs import live_svg
from playground.outputs.fmt import md_text
from playground.ui import ids
from playground.ui.live import LiveFrame, LiveRun, submit, until_done
from playground.ui.live_channels import Feeds
from playground.ui.render import badge_md, error_md, phases_html
from playground.ui.slots import Slots

COLD_NOTE = ("🥶 **cold run**: the server was still warming up when this ran (grammars "
             "compiling, first requests); run again for warm numbers.\n\n")


@dataclass
class Shown:
    """What the last live event showed, for the final event."""

    kind: Literal["run", "replay", "ladder"]
    recs: list[Recording] = field(default_factory=list)
    where: list[int] = field(default_factory=list)  # the column of each recording
    url: str = ""
    floor_ms: float | None = None
    errors: dict[int, str] = field(default_factory=dict)  # column -> why nothing was sent
    cold: bool = False
    ladder: str | None = None  # a ladder's name: its steps, and the runs among them
    ladder_slots: list[Recording | str] | None = None
    label: str = ""  # a replay: "replay of <recording> (<machine>, <date>)", wherever it shows
    titles: dict[int, str] = field(default_factory=dict)  # column -> what it ran (a step)


@dataclass
class Session:
    """Per-browser-session state (gr.State; Gradio hands the same object to every event)."""

    runs: int = 0
    history: list[dict[str, Any]] = field(default_factory=list)
    last: list[RequestRecord] = field(default_factory=list)
    active: LiveRun | None = None  # the run in flight: Stop cancels it
    shown: Shown | None = None
    pending: Any = None  # what a first event prepared for the live event chained after it
    saved: set[str] = field(default_factory=set)  # presets this session saved (it may replace)
    task: asyncio.Task[None] | None = None  # a Run started through the run route
    handover: list[str] | None = None  # that run's final column values, for its hand-over
    warning: str = ""  # why that run sent nothing (shown as a toast at the hand-over)
    connects: int = 0  # Connect presses (the page-load check never overwrites one)

    def load_check_may_show(self) -> bool:
        """Whether the page-load check of the default server may show its answer: only while
        no Connect was pressed. The check is always older than any Connect on its page (a page
        loads before anything on it can be pressed), but Gradio's queue may answer it later,
        and then it would put the default server's status over the typed URL's."""
        return self.connects == 0

    def stop(self) -> None:
        if self.active is not None:
            self.active.stop()


@dataclass
class Stage:
    """The components a run draws on."""

    columns: list[Any]
    history_plot: Any
    history_table: Any
    token: Any  # hidden textbox: the live feed's token, chosen by the page at the click
    feeds: Feeds = field(default_factory=Feeds)
    slots: Slots = field(default_factory=Slots)  # the app's, shared with /compare
    # Events that write the columns' presets or controls from the app (a preset picked, a
    # ladder's steps, a replay's head). A control's own `input` event fires only when the
    # visitor edits it, so the plan's hand-over and View code are chained after each of these
    # (playground_tab): one hand-over per pick, not one per control that the pick changed.
    writes: list[Any] = field(default_factory=list)

    def live_outputs(self) -> list[Any]:
        cs = self.columns
        return [*[c.answer for c in cs], *[c.reasoning for c in cs], *[c.metrics for c in cs]]

    def final_outputs(self) -> list[Any]:
        cs = self.columns
        return [*[c.error for c in cs], *[c.badge for c in cs], *[c.phases for c in cs],
                *[c.code_py for c in cs], *[c.code_curl for c in cs], self.history_plot,
                self.history_table]

    def frame(self, token: str, message: str = "") -> LiveFrame:
        """A cleared frame with the live feed for the run about to start."""
        f = LiveFrame(len(self.columns), feed=self.feeds.open(token))
        f.metrics = [message] * len(self.columns)
        return f

    async def play(self, sess: Session, shown: Shown, work: Coroutine[Any, Any, Any],
                   measure: Any, frame: LiveFrame, log: Any = None, who: str = "",
                   reserved: bool = False) -> list[str]:
        """Run `work` (it fills shown.recs) on the measuring loop while the live feed streams
        it; return the columns' final values. `log` (a context.RunLog) stores each recording
        as soon as it is final, and can stop the run at the app's shutdown. The run takes one
        of `who`'s slots, unless the caller holds one already (`reserved`: taken before its
        own work, and given back by the caller)."""
        sess.shown = shown
        feed = frame.feed
        busy = "" if reserved else self.slots.take(who)
        if busy:
            work.close()
            if feed is not None:
                feed.finish()
            for col in shown.where:
                frame.metrics[col] = f"❌ **busy**: {busy}"
            shown.recs, shown.where = [], []
            return frame.values()
        if feed is not None:
            feed.notes = {col: _plain(text) for col, text in shown.errors.items()}
            feed.recs, feed.where = shown.recs, shown.where
            feed.replay = shown.label
            feed.titles = shown.titles
        run = submit(measure, work)
        if feed is not None:
            feed.on_close = run.stop  # the tab closed mid-run: vLLM aborts its requests
        sess.active = run
        if log is not None:
            log.stop = run.stop
        try:
            await until_done(run, shown.recs, log.store if log is not None else None,
                             abandoned=feed.abandoned if feed is not None else None)
        finally:
            if not reserved:
                self.slots.give(who)
            if feed is not None:
                feed.finish()
            if sess.active is run:
                sess.active = None
        label = f"▶️ *{md_text(shown.label)}* · " if shown.label else ""
        notes = [label + (COLD_NOTE if shown.cold else "") + _hint(r) for r in shown.recs]
        return frame.final(shown.recs, shown.where, floor_ms=shown.floor_ms, notes=notes)

    def final_values(self, sess: Session) -> list[Any]:
        shown = sess.shown
        n = len(self.columns)
        errors, badges, phases = [""] * n, [""] * n, [""] * n
        code_py: list[Any] = [gr.skip()] * n
        code_curl: list[Any] = [gr.skip()] * n
        skip = gr.skip()
        if shown is None:
            return [*errors, *badges, *phases, *code_py, *code_curl, skip, skip]
        for col, text in shown.errors.items():
            errors[col] = text
        for rec, col in zip(shown.recs, shown.where, strict=True):
            errors[col] = error_md(rec)
            badges[col] = badge_md(rec)
            phases[col] = phases_html(rec) if rec.finished else ""
            if shown.kind != "replay":
                code_py[col] = request.code_snippet(rec.request, rec.base_url,
                                                    rec.variant.client)
                code_curl[col] = request.curl_snippet(rec.request, rec.base_url)
        hist_plot: Any = skip
        hist_table: Any = skip
        if shown.kind != "replay" and shown.recs:
            hist_plot = live_svg.history(sess.history)
            hist_table = [[h["run"], h["variant"], _r(h["ttft_ms"]), _r(h["e2e_ms"]),
                           h["tokens"]] for h in sess.history]
        return [*errors, *badges, *phases, *code_py, *code_curl, hist_plot, hist_table]


def stage_buttons(disabled_because: str = "") -> str:
    """The stage's Run and Stop: plain buttons the page script sends straight to the app
    (static/live.js). With a reason (replay mode), Run is disabled and the reason is shown."""
    off = f' disabled title="{html.escape(disabled_because)}"' if disabled_because else ""
    return (f'<div class="stage-buttons"><button id="{ids.STAGE_RUN}" type="button" '
            f'class="stage-btn stage-run"{off}>Run</button><button id="{ids.STAGE_STOP}" '
            f'type="button" class="stage-btn stage-stop" disabled>Stop</button></div>'
            f'<div id="{ids.STAGE_NOTE}" class="stage-note">{html.escape(disabled_because)}'
            '</div>')


def record_history(sess: Session, recs: Sequence[Recording]) -> None:
    sess.runs += 1
    for rec in recs:
        m = rec.metrics()
        sess.history.append({"run": sess.runs, "variant": rec.variant.name,
                             "ttft_ms": m.ttft_ms, "e2e_ms": m.e2e_ms,
                             "tokens": m.completion_tokens})
    sess.last = [RequestRecord.of(r) for r in recs]


def _plain(markdown: str) -> str:
    """A column's Markdown note as plain text (the live feed escapes it again for HTML)."""
    return html.unescape(re.sub(r"\\(.)", r"\1", markdown.replace("**", "")))


def _hint(rec: Recording) -> str:
    hint = cold_hint(rec)
    return hint + "\n\n" if hint else ""


def _r(v: float | None) -> float | None:
    return None if v is None else round(v, 1)

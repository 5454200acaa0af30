"""The programmatic endpoint `/compare` (gradio_client, "Use via API", curl): one comparison by
preset names.

A call is bounded like the page's Run: the visitor's and the app's run slots are taken before
any work is done, and given back when the call ends. It runs on the measuring loop like every
run, and is stopped when no one reads its results (ui/readers: no open result stream for
Settings.gone_after_s); what it measured until then is stored and returned, marked cancelled.
"""

from __future__ import annotations

import time

import gradio as gr

from playground.core.compare import prepare
from playground.core.record import RequestRecord
from playground.core.runner import run_to_end
from playground.errors import PlaygroundError
from playground.ui.columns import MAX_COLUMNS
from playground.ui.context import UIContext, owner_of
from playground.ui.live import submit, until_done
from playground.ui.readers import job_keys


def register(ctx: UIContext) -> None:
    """Add `/compare` to the Blocks being built (inside `with gr.Blocks()`)."""

    async def compare_presets(prompt: str, presets: list[str], request: gr.Request
                              ) -> list[dict]:
        """Send `prompt` to the named presets (1-4) at once; returns every measured request."""
        if not isinstance(presets, list) or not 1 <= len(presets) <= MAX_COLUMNS:
            n = len(presets) if isinstance(presets, list) else "not a list of"
            raise gr.Error(f"presets: {n} names given; /compare runs 1 to {MAX_COLUMNS} "
                           "presets at once -- send fewer")
        try:
            variants = [ctx.library.get(str(name)) for name in presets]
        except PlaygroundError as e:
            raise gr.Error(str(e)) from None
        who = ctx.visitor(request)
        busy = ctx.slots.take(who)  # the same slots as the page's Run, before any work
        if busy:
            raise gr.Error(f"busy: {busy}")
        started, keys = time.monotonic(), job_keys(request)
        log, recs = None, []
        try:
            s = ctx.settings
            key = s.api_key_value()
            prepared = await ctx.measure.run(prepare(s.base_url, key, s.model or None,
                                                     variants, prompt, port=ctx.port))
            error = prepared.first_error()
            if error is not None:
                raise error
            recs = prepared.recordings
            log = ctx.run_log(recs, owner_of(request))
            run = submit(ctx.measure, run_to_end(ctx.pool(key), recs, mode="concurrent",
                                                 timeout_s=s.timeout_s))
            log.stop = run.stop  # the app's shutdown stops it too
            # stopped when no one reads the results (gone_after_s without an open result stream)
            await until_done(run, recs, log.store, abandoned=lambda: ctx.readers.unread_s(
                keys, started) > s.gone_after_s)
        except PlaygroundError as e:
            raise gr.Error(str(e)) from None
        finally:
            ctx.slots.give(who)
            if log is not None:
                ctx.close_log(log)
        return [RequestRecord.of(r).line() for r in recs]

    gr.api(compare_presets, api_name="compare", concurrency_limit=ctx.concurrency_limit,
           concurrency_id="runs")

"""The plain-page control of benchmarks/ui_fidelity: served only by an app started with
PLAYGROUND_UI_INSTRUMENT=1 (Settings.ui_instrument), never on a normal page.

The thinnest page that can show the same comparison: one button, four textareas, no Gradio
(`bench/plain`). A click POSTs to `bench/plain/run`, which sends the same requests as the
Playground's Run -- the same presets, the same runner, client pool and measuring loop of the
same app process -- and relays each piece of answer text as one line of JSON over the same
response, then one last line with each column's measured request (RequestRecord). What the
browser paints here is the floor the stage is compared with: the same machine, server, app and
browser, minus the stage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from playground.core.compare import prepare
from playground.core.record import RequestRecord
from playground.core.runner import Recording, run_to_end
from playground.errors import PlaygroundError
from playground.ui import ids
from playground.ui.columns import MAX_COLUMNS
from playground.ui.login import logged_in

POLL_S = 0.004

SCRIPT = Path(__file__).parent / "static" / "plain.js"
PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>plain control</title></head>
<body><button id="plain-run" type="button">Run</button>
<input id="plain-prompt" size="60"><div style="display:flex;gap:8px">{boxes}</div>
<script>
{script}</script></body></html>"""


def routes(ctx: Any) -> list[Route]:
    """`bench/plain` (the page) and `bench/plain/run` (POST), for a UIContext `ctx`."""

    async def page(request: Request) -> Response:
        if not logged_in(request):
            return HTMLResponse("not logged in", status_code=401)
        boxes = "".join(f'<div id="{ids.col(ids.ANSWER, i)}"><textarea rows="12" cols="36">'
                        "</textarea></div>" for i in range(MAX_COLUMNS))
        return HTMLResponse(PAGE.format(boxes=boxes, script=SCRIPT.read_text("utf-8")))

    async def run(request: Request) -> Response:
        if not logged_in(request):
            return JSONResponse({"error": "not logged in"}, status_code=401)
        body = json.loads(await request.body() or b"{}")
        n = max(1, min(MAX_COLUMNS, int(body.get("n", MAX_COLUMNS))))
        s = ctx.settings
        try:
            variant = ctx.library.get(str(body.get("preset") or "fixed-64-stream"))
            prepared = await prepare(s.base_url, s.api_key_value(), s.model or None,
                                     [variant] * n, str(body.get("prompt") or ""),
                                     port=ctx.port)
        except PlaygroundError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        recs = [r for r in prepared.slots if isinstance(r, Recording)]
        return StreamingResponse(relay(ctx, recs), media_type="application/x-ndjson")

    return [Route("/bench/plain/", page, methods=["GET"]),
            Route("/bench/plain/run", run, methods=["POST"])]


async def relay(ctx: Any, recs: list[Recording]) -> AsyncIterator[bytes]:
    """Each column's new answer text, one JSON line per piece, as the runner receives it."""
    work = ctx.measure.submit(run_to_end(ctx.pool(ctx.settings.api_key_value()), recs,
                                         mode="concurrent", timeout_s=ctx.settings.timeout_s))
    sent = [0] * len(recs)
    while True:
        done = work.done()
        for i, rec in enumerate(recs):
            text = rec.content
            if len(text) > sent[i]:
                yield (json.dumps({"column": i, "text": text[sent[i]:]}, ensure_ascii=False)
                       + "\n").encode()
                sent[i] = len(text)
        if done:
            break
        await asyncio.sleep(POLL_S)
    records = [RequestRecord.of(rec).line() for rec in recs]  # the measured rows, whole
    yield (json.dumps({"end": True, "records": records}, ensure_ascii=False) + "\n").encode()

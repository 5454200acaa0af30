"""The stage's own routes: Run and Stop go from the page straight to the app, with no Gradio
event between the click and the request.

Why: a Run that is a Gradio event first gathers every input of the event, then makes the
browser refresh the loading state of every component it touches; on a 2-core machine that put
~250 ms between the click and the first answer text (docs/fidelity.md). Here:

- Gradio keeps the controls. Whenever one of the run's inputs changes (a preset picked, a value
  typed, the page loaded), a small Gradio event (`sync`, no outputs, no loading state) hands
  every input to the app, which keeps it as the page's *plan* under the page's live token
  (static/live.js numbers each hand-over: `seq`).
- A click on Run POSTs `stage/run/<token>` with the `seq` the page last handed over and the
  prompt box's text (the one input not handed over as it changes: typing in it sends nothing,
  and the text typed just before the click is the one run). The app waits (bounded) until that
  plan has arrived, starts the run on the measuring loop, and answers at once; the run streams
  over the page's live channel (ui/live_feed) as before. A control edited just before the
  click, whose hand-over Gradio has not fired yet, holds the click back until it is numbered
  (at most 1 s): the value typed is the one run.
- When the run ends, its last live message says `handover`; the page then presses the hidden
  hand-over button, a Gradio event that draws the finished results (metrics, badges, code,
  history) once.
- Stop POSTs `stage/stop/<token>`: it stops whatever that page has in flight (a run, a
  replay, a ladder).

Both routes are behind the app's login, like every Gradio route (ui/login: `logged_in`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from playground.ui import ids
from playground.ui.live_feed import TOKEN_RE
from playground.ui.login import logged_in
from playground.ui.stage import Session

MAX_PLANS = 1024  # pages whose plans are kept (the least recently handed over goes first)
WAIT_S = 10.0  # a click waits this long for the plan it names to arrive
MAX_BODY = 2 * 2**20  # a click's body: the prompt (MAX_PROMPT_CHARS, JSON-escaped) and a number
SYNC_JS = ("(token, ...rest) => [window.qllPlan ? window.qllPlan() : '', ...rest]")


@dataclass
class Plan:
    """What a page would run now: every input of a run, as Gradio handed them over."""

    seq: int
    values: list[Any]
    session: Session
    owner: str
    at: float = field(default_factory=time.monotonic)
    prompt: str | None = None  # the click's prompt (None: the one handed over)


Starter = Callable[[Plan, str, str], Awaitable[str | None]]


class Plans:
    """The pages' plans, by the page's live token."""

    def __init__(self, limit: int = MAX_PLANS) -> None:
        self._plans: dict[str, Plan] = {}
        self._arrived = asyncio.Condition()
        self.limit = limit

    @staticmethod
    def parse(handle: str) -> tuple[str, int] | None:
        """'<token>:<seq>' (from static/live.js) -> (token, seq); None when malformed."""
        token, _, seq = str(handle or "").partition(":")
        if not TOKEN_RE.fullmatch(token) or not seq.isdigit():
            return None
        return token, int(seq)

    async def put(self, handle: str, values: list[Any], session: Session, owner: str) -> None:
        parsed = self.parse(handle)
        if parsed is None:
            return
        token, seq = parsed
        old = self._plans.get(token)
        if old is not None and old.seq >= seq:  # hand-overs may arrive out of order
            return
        if old is None:
            while len(self._plans) >= self.limit:
                oldest = min(self._plans, key=lambda k: self._plans[k].at)
                del self._plans[oldest]
        self._plans[token] = Plan(seq, values, session, owner)
        async with self._arrived:
            self._arrived.notify_all()

    def get(self, token: str) -> Plan | None:
        return self._plans.get(token)

    async def wait(self, token: str, seq: int, timeout_s: float = WAIT_S) -> Plan | None:
        """The page's plan once the hand-over numbered `seq` (or a later one) has arrived."""
        def ready() -> bool:
            plan = self._plans.get(token)
            return plan is not None and plan.seq >= seq

        try:
            async with self._arrived:
                await asyncio.wait_for(self._arrived.wait_for(ready), timeout_s)
        except TimeoutError:
            return None
        return self._plans.get(token)


def routes(plans: Plans, start: Starter, visitor: Callable[[Request], str],
           closed: str = "") -> list[Route]:
    """`stage/run/<token>` and `stage/stop/<token>` (POST). `start(plan, token, who)` starts
    the run and returns None, or why it did not start; `closed`: why no run can start here at
    all (replay mode), answered before anything else is read."""

    async def run(request: Request) -> Response:
        token = request.path_params.get("token", "")
        if not logged_in(request):
            return JSONResponse({"error": "not logged in"}, status_code=401)
        if closed:
            return JSONResponse({"error": closed}, status_code=409)
        if not TOKEN_RE.fullmatch(token):
            return JSONResponse({"error": "bad page token"}, status_code=400)
        raw = b""
        async for part in request.stream():
            raw += part
            if len(raw) > MAX_BODY:
                return JSONResponse({"error": f"the request is over {MAX_BODY // 2**20} MiB: "
                                     "shorten the prompt"}, status_code=413)
        try:
            body = json.loads(raw or b"{}")
            seq = int(body.get("seq", 0))
            prompt = body.get("prompt")
        except (ValueError, TypeError, AttributeError):
            return JSONResponse({"error": "the body must be JSON: {\"seq\": N, \"prompt\": "
                                 "\"...\"}"}, status_code=400)
        if prompt is not None and not isinstance(prompt, str):
            return JSONResponse({"error": "prompt: must be text"}, status_code=400)
        plan = await plans.wait(token, seq)
        if plan is None:
            return JSONResponse({"error": "this page's settings did not reach the app: "
                                 "reload the page"}, status_code=409)
        why = await start(dataclasses.replace(plan, prompt=prompt), token, visitor(request))
        if why is not None:
            return JSONResponse({"error": why}, status_code=409)
        return JSONResponse({"started": True}, status_code=202)

    async def stop(request: Request) -> Response:
        token = request.path_params.get("token", "")
        if not logged_in(request):
            return JSONResponse({"error": "not logged in"}, status_code=401)
        plan = plans.get(token) if TOKEN_RE.fullmatch(token) else None
        if plan is not None:
            plan.session.stop()
        return JSONResponse({"stopped": plan is not None})

    return [Route(f"/{ids.STAGE_ROUTE}run/{{token}}", run, methods=["POST"]),
            Route(f"/{ids.STAGE_ROUTE}stop/{{token}}", stop, methods=["POST"])]

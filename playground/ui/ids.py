"""The element ids that the page script, the Python views and the tests share: defined here
once, handed to the page script as JSON (`for_script`), and documented for external probes
(docs/playground.md, "Hooks for external probes")."""

from __future__ import annotations

# per column i (0-based)
ANSWER = "answer-"  # the answer textbox (its textarea holds the visible answer)
REASONING = "reasoning-"  # the reasoning textbox (in a panel, collapsed unless shown)
LIVE_STATUS = "live-status-"  # the live status line under the column's controls
METRICS = "metrics-"
BADGE = "badge-"
PHASES = "phases-"
CODE_CURL = "code-curl-"
# per page
PROMPT = "prompt"  # the prompt box (its textarea): a click on Run sends its text along
CONNECTION = "server-status"  # the connection line (data-replay while a replay is shown)
HEADLINE = "hl-live"  # the presenter's headline row
TIMELINE = "tl-live"  # the token timeline
BARS = "bars-live"  # the latency bars
PRESENTER_TOGGLE = "presenter-toggle"  # the "Presenter view" button
LIVE_ROUTE = "live/"  # the page's live stream: live/<page token>
STAGE_RUN = "stage-run"  # the Run button (the page script sends it to STAGE_ROUTE)
STAGE_STOP = "stage-stop"  # the Stop button
STAGE_NOTE = "stage-note"  # why a click did not start a run
HANDOVER = "stage-handover"  # the hidden button the page presses when a Run has ended
STAGE_ROUTE = "stage/"  # stage/run/<page token>, stage/stop/<page token> (POST)


def col(prefix: str, i: int) -> str:
    """The id of column `i`'s element: col(ANSWER, 0) == "answer-0"."""
    return f"{prefix}{i}"


def for_script() -> dict[str, str]:
    """What the page script (static/live.js) reads as `window.qllIds`."""
    return {"answer": ANSWER, "reasoning": REASONING, "status": LIVE_STATUS,
            "metrics": METRICS, "badge": BADGE, "phases": PHASES, "headline": HEADLINE,
            "timeline": TIMELINE, "bars": BARS, "presenterToggle": PRESENTER_TOGGLE,
            "liveRoute": LIVE_ROUTE, "run": STAGE_RUN, "stop": STAGE_STOP,
            "note": STAGE_NOTE, "handover": HANDOVER, "stageRoute": STAGE_ROUTE,
            "prompt": PROMPT, "connection": CONNECTION}

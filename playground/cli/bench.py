"""Headless benchmark commands: `playground bench` (progress bar, files) and `playground runs`."""

from __future__ import annotations

import asyncio
import string
import sys
from pathlib import Path
from typing import Any

from playground.errors import ValidationFailed
from playground.lab import imports, monitor, versus
from playground.lab.bench import run_experiment
from playground.lab.store import Run, RunStore, read_run
from playground.lab.summary import summarize_run, write_outputs
from playground.outputs import html
from playground.outputs.fmt import DEMO_NOTICE, at_once_text
from playground.outputs.tables import (
    GRID_HEADERS,
    SUMMARY_HEADERS,
    WHY_HEADERS,
    as_dicts,
    grid_rows,
    objectives,
    summary_rows,
    text_table,
    why_rows,
)
from playground.settings import Settings
from playground.specs.experiments import load_experiment
from playground.specs.presets import PresetLibrary


def _resolve(path: Path, settings: Settings) -> Path:
    if path.is_file():
        return path
    candidate = settings.presets_dir / "experiments" / f"{path.name.removesuffix('.yaml')}.yaml"
    if candidate.is_file():
        return candidate
    raise ValidationFailed("experiment", f"no such file {path}; shipped experiments: "
                           + ", ".join(p.stem for p in sorted(
                               (settings.presets_dir / "experiments").glob("*.yaml"))))


def _bar(done: int, total: int, failed: int, width: int = 30) -> str:
    filled = int(width * done / total) if total else width
    return f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} failed {failed}"


def run_bench(settings: Settings, path: Path, out: Path | None, *,
              ttft_slo_ms: float | None = None, e2e_slo_ms: float | None = None,
              background: int | None = None, background_engine: str | None = None,
              workers: int | None = None) -> int:
    library = PresetLibrary(settings.presets_dir, settings.user_presets_dir)
    exp = load_experiment(_resolve(path, settings), library)
    for flag, key, value, rule in (
            ("--background", "background", background, "must be 0-256 requests (at most 64 "
             "with --background-engine playground)"),
            ("--background-engine", "background_engine", background_engine,
             "auto, playground or vllm-bench"),
            ("--workers", "workers", workers, "must be 1-64 processes")):
        if value is None:
            continue
        try:
            exp = exp.model_validate({**exp.model_dump(by_alias=True), key: value})
        except ValueError:
            raise ValidationFailed(flag, rule) from None

    async def go() -> tuple[Path, int]:
        run_path, failed = None, 0
        async for ev in run_experiment(settings, exp):
            if ev.kind == "started":
                run_path = ev.path
                print(f"{exp.name}: {ev.total} requests (incl. warm-up) -> {run_path}",
                      file=sys.stderr)
            elif ev.kind == "request":
                failed = ev.failed
                step = max(1, ev.total // 10)
                if sys.stderr.isatty():
                    print(_bar(ev.done, ev.total, ev.failed), end="", file=sys.stderr,
                          flush=True)
                elif ev.done % step == 0 or ev.done == ev.total:
                    print(_bar(ev.done, ev.total, ev.failed).strip(), file=sys.stderr)
            else:
                failed = ev.failed
        print(file=sys.stderr)
        assert run_path is not None
        return run_path, failed

    run_path, failed = asyncio.run(go())
    run = read_run(run_path)
    out = out or run_path.with_suffix("")
    paths = write_outputs(run, out, ttft_slo_ms=ttft_slo_ms, e2e_slo_ms=e2e_slo_ms)
    print(report_text(run, ttft_slo_ms=ttft_slo_ms, e2e_slo_ms=e2e_slo_ms))
    print("\nfiles: " + ", ".join(str(p) for p in paths.values()))
    if failed:
        print(f"error: {failed} timed request(s) failed (see {paths['csv']})", file=sys.stderr)
        return 1
    return 0


def report_text(run: Run, *, ttft_slo_ms: float | None = None,
                e2e_slo_ms: float | None = None) -> str:
    summary = summarize_run(run, ttft_slo_ms=ttft_slo_ms, e2e_slo_ms=e2e_slo_ms)
    lines = [text_table(as_dicts(SUMMARY_HEADERS, summary_rows(summary)), SUMMARY_HEADERS), ""]
    lines += [f"- {c.verdict}" for c in summary.comparisons]
    lines += [f"WARNING {w}" for w in at_once_text(summary)]
    heads = [*WHY_HEADERS]
    heads[4] = f"goodput ({objectives(summary.slo)})"
    lines += ["", "TTFT by definition (p50 ms), goodput and the physical floor"
              + (f" ({summary.floor_ms:.3f} ms/token)" if summary.floor_ms else "") + ":",
              text_table(as_dicts(heads, why_rows(summary)), heads)]
    if summary.grid:
        lines += ["", "Thinking x guided JSON:",
                  text_table(as_dicts(GRID_HEADERS, grid_rows(summary.grid)), GRID_HEADERS)]
    bg = run.background
    if bg is not None and bg.requests_in_flight:
        lines.append(f"\nunder load: {bg.describe()}")
    if summary.server is not None:
        lines.append(f"\nthe server meanwhile: {summary.server.text}")
    if run.meta.demo_model:
        lines.append(f"\nNOTE: {DEMO_NOTICE}")
    return "\n".join(lines)


def list_runs(settings: Settings, *, kind: str = "bench", metric: str = "e2e_ms",
              p95_ms: float | None = None) -> int:
    """Every run, oldest first, with its p95 -- flagged against the threshold when one is set."""
    metric = monitor.check_metric(metric)
    runs = RunStore(settings.runs_dir).list_runs(kind)
    if not runs:
        print(f"no {kind} runs under {settings.runs_dir / kind}")
    points = monitor.history(runs, metric, p95_ms)
    for p in points:
        print(monitor.line(p, metric, p95_ms))
    if p95_ms is not None and points:
        above = sum(bool(p.crossed) for p in points)
        print(f"{above} of {len(points)} runs above {p95_ms:g} ms ({metric} p95)")
    return 0


def watch_runs(settings: Settings, *, p95_ms: float, kind: str = "bench",
               metric: str = "e2e_ms") -> int:
    """For CI or cron: 0 when the latest run's p95 is at most the threshold, 1 when above, 2
    when there is nothing to judge (no run, no value)."""
    metric = monitor.check_metric(metric)
    if not p95_ms > 0:
        raise ValidationFailed("--p95-ms", "give a positive threshold in milliseconds")
    runs = RunStore(settings.runs_dir).list_runs(kind)
    if not runs:
        print(f"no {kind} runs under {settings.runs_dir / kind}: nothing to judge",
              file=sys.stderr)
        return 2
    latest = monitor.point(runs[0], metric, p95_ms)  # list_runs: newest first
    print(monitor.line(latest, metric, p95_ms))
    if latest.crossed is None:
        print(f"the latest run has no {metric} value to judge", file=sys.stderr)
        return 2
    return 1 if latest.crossed else 0


def compare_runs(settings: Settings, paths: list[Path], html_out: Path | None = None) -> int:
    """Each run's report, then run A vs each other run with calibrated verdicts (lab/versus);
    with `html_out`, the runs side by side on one page (outputs/versus_view)."""
    for p in paths:
        if not p.is_file():
            raise ValidationFailed("runs", f"no such run file {p}")
    runs = [read_run(p) for p in paths]
    for p, run in zip(paths, runs, strict=True):
        print(f"== {p}")
        print(report_text(run))
        print()
    sides = [versus.Side(f"{ab}: {who(run)} ({p.name})", run)
             for ab, p, run in zip(string.ascii_uppercase, paths, runs, strict=False)]
    for other in sides[1:]:
        print("\n".join(versus.versus(sides[0], other)))
    if html_out is not None:
        html_out.parent.mkdir(parents=True, exist_ok=True)
        html_out.write_text(html.versus(*side_by_side(sides)), "utf-8")
        print(f"wrote {html_out}")
    return 0


def side_by_side(sides: list[versus.Side]
                 ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """What outputs/html.versus draws: each run's facts and records, and the first run's
    verdict table against each other run."""
    runs = [{"name": s.name, "tool": who(s.run), "model": s.run.meta.model or "?",
             "n": len(s.run.timed), "failed": sum(not r.ok for r in s.run.timed),
             "notes": (s.run.meta.model_extra or {}).get("notes")
             or "this project's own measurement", "timed": s.run.timed} for s in sides]
    tables = [{"heading": f"{sides[0].name} vs {b.name}",
               "rows": [(j.group, f"{j.label} p50",
                         f"{j.effect.n_baseline} vs {j.effect.n_variant}",
                         j.text_for(b.name.split(":")[0]))
                        for j in versus.judged(sides[0].run, b.run)]} for b in sides[1:]]
    return runs, tables


def who(run: Run) -> str:
    """Which tool measured a run: ours, or the one it was imported from."""
    return str((run.meta.model_extra or {}).get("tool") or "qwen-latency-lab")


def import_run(settings: Settings, path: Path, label: str | None) -> int:
    """Another tool's result -> a run file of ours (runs/imported/), listed and comparable."""
    meta, records = imports.read_result(path, label)
    run_file = RunStore(settings.runs_dir).new_run("imported")
    run_file.append(meta, *records)
    failed = sum(r.error is not None for r in records)
    print(f"imported {len(records)} requests ({failed} failed) from {meta.model_extra['tool']}"
          f" -> {run_file.path}")
    print(f"note: {meta.model_extra['notes']}")
    return 0

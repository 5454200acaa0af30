"""Headless benchmark commands: `playground bench` (progress bar, files) and `playground runs`."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from playground.errors import ValidationFailed
from playground.lab.bench import run_experiment
from playground.lab.insight import GRID_HEADERS, grid_rows
from playground.lab.report import (
    SUMMARY_HEADERS,
    insight_rows,
    summarize_run,
    summary_rows,
    write_outputs,
)
from playground.lab.store import RunStore, read_run
from playground.outputs.tables import text_table
from playground.settings import Settings
from playground.specs.presets import PresetLibrary, load_experiment


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
              background: int | None = None) -> int:
    library = PresetLibrary(settings.presets_dir, settings.user_presets_dir)
    exp = load_experiment(_resolve(path, settings), library)
    if background is not None:
        try:
            exp = exp.model_validate({**exp.model_dump(by_alias=True),
                                      "background": background})
        except ValueError:
            raise ValidationFailed("--background", "must be 0-64 requests") from None

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
    records = read_run(run_path)
    out = out or run_path.with_suffix("")
    paths = write_outputs(records, out, ttft_slo_ms=ttft_slo_ms, e2e_slo_ms=e2e_slo_ms)
    print(report_text(records, ttft_slo_ms=ttft_slo_ms, e2e_slo_ms=e2e_slo_ms))
    print("\nfiles: " + ", ".join(str(p) for p in paths.values()))
    if failed:
        print(f"error: {failed} timed request(s) failed (see {paths['csv']})", file=sys.stderr)
        return 1
    return 0


def report_text(records: list[dict], *, ttft_slo_ms: float | None = None,
                e2e_slo_ms: float | None = None) -> str:
    summary = summarize_run(records, ttft_slo_ms=ttft_slo_ms, e2e_slo_ms=e2e_slo_ms)
    rows = [dict(zip(SUMMARY_HEADERS, map(str, r), strict=True))
            for r in summary_rows(summary)]
    lines = [text_table(rows, SUMMARY_HEADERS), ""]
    lines += [f"- {c['verdict']}" for c in summary["comparisons"]]
    extra = insight_rows(summary)
    heads = ["variant", "first chunk (vllm bench)", "first token (GuideLLM)", "TTFA",
             f"goodput (TTFT<={ttft_slo_ms}, E2E<={e2e_slo_ms} ms)", "TPOT p50",
             "x above floor"]
    table = [dict(zip(heads, [*d, g[1], f[1], f[2]], strict=True))
             for d, g, f in zip(extra["definitions"], extra["goodput"], extra["floor"],
                                strict=True)]
    lines += ["", "TTFT by definition (p50 ms), goodput and the physical floor"
              + (f" ({summary['floor_ms']:.3f} ms/token)" if summary["floor_ms"] else "") + ":",
              text_table(table, heads)]
    if summary["grid"]:
        grid = [dict(zip(GRID_HEADERS, r, strict=True)) for r in grid_rows(summary["grid"])]
        lines += ["", "Thinking x guided JSON:", text_table(grid, GRID_HEADERS)]
    bg = summary.get("background")
    if bg and bg.get("requests_in_flight"):
        lines.append(f"\nunder load: {bg['requests_in_flight']} background requests in flight "
                     f"({bg['completed']} completed, {bg['failed']} failed)")
    if summary["meta"].get("demo_model"):
        lines.append("\nNOTE: the offline demo model (random weights) served this run: "
                     "accuracy is meaningless, timings are real.")
    return "\n".join(lines)


def list_runs(settings: Settings) -> int:
    runs = RunStore(settings.runs_dir).list_runs("bench")
    if not runs:
        print(f"no benchmark runs under {settings.runs_dir / 'bench'}")
    for p in runs:
        records = read_run(p)
        meta = next((r for r in records if r.get("kind") == "meta"), {})
        n = sum(r.get("kind") == "request" for r in records)
        print(f"{p}  {meta.get('experiment', {}).get('name', '?')}  {n} requests")
    return 0


def compare_runs(settings: Settings, paths: list[Path]) -> int:
    for p in paths:
        if not p.is_file():
            raise ValidationFailed("runs", f"no such run file {p}")
    for p in paths:
        print(f"== {p}")
        print(report_text(read_run(p)))
        print()
    return 0

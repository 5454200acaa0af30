"""Latency monitoring with an alert threshold (seed 000: "alert when P95 latency > 1800 ms"):
each run's p95 against a threshold the user sets, oldest to newest, and a verdict on the latest
run for CI or cron (`playground runs watch --p95-ms N`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from playground.core.record import METRIC_NAMES, values
from playground.errors import PresetError, ValidationFailed
from playground.lab.stats import percentile
from playground.lab.store import read_run


@dataclass(frozen=True)
class Point:
    """One run on the monitor: its p95 and whether it crossed the threshold."""

    path: Path
    name: str
    n: int  # timed requests with a value
    failed: int
    p95_ms: float | None
    crossed: bool | None  # None: no threshold set, or no value to judge
    unreadable: str = ""


def check_metric(metric: str) -> str:
    if metric not in METRIC_NAMES:
        raise ValidationFailed("--metric", f"{metric!r} is not one of {', '.join(METRIC_NAMES)}")
    return metric


def point(path: Path, metric: str = "e2e_ms", threshold_ms: float | None = None) -> Point:
    try:
        run = read_run(path)
    except PresetError as e:
        return Point(path, "?", 0, 0, None, None, unreadable=str(e))
    timed = run.timed
    vals = values(timed, metric)
    p95 = percentile(vals, 95)
    name = run.meta.experiment.name if run.meta.experiment else path.parent.name
    crossed = None if threshold_ms is None or p95 is None else p95 > threshold_ms
    return Point(path, name, len(vals), sum(not r.ok for r in timed), p95, crossed)


def history(paths: Sequence[Path], metric: str = "e2e_ms", threshold_ms: float | None = None
            ) -> list[Point]:
    """Oldest first (run files are named by their start time)."""
    return [point(p, metric, threshold_ms) for p in sorted(paths)]


def line(p: Point, metric: str, threshold_ms: float | None) -> str:
    if p.unreadable:
        return f"{p.path}  unreadable: {p.unreadable}"
    p95 = "-" if p.p95_ms is None else f"{p.p95_ms:,.1f} ms"
    flag = ""
    if p.crossed is not None:
        flag = (f"  ABOVE the {threshold_ms:g} ms threshold" if p.crossed
                else f"  ok (<= {threshold_ms:g} ms)")
    return (f"{p.path}  {p.name}  n={p.n} failed={p.failed}  {metric} p95 {p95}{flag}")

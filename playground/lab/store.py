"""Run history: one append-only JSONL file per run, written as results arrive, read back typed.

Lines: one `meta` (where and what was measured), one `request` per finished request
(core/record.RequestRecord), and for some runs `batch` (a claim's batch wall time) and
`background` (the load kept in flight). A run that is stopped or killed keeps every line already
written; `read_run` skips a torn line (invalid JSON) and names the line and the run format of
anything else it cannot read.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from playground.core.record import RUN_FORMAT, RequestRecord
from playground.core.run_meta import BackgroundRecord, RunMeta
from playground.errors import PresetError
from playground.server.gpu import GpuSample
from playground.server.series import Series, SeriesInfo, ServerSample
from playground.specs.presets import first_error

KNOWN_FORMATS = (1, 2)


class BatchRecord(BaseModel):
    """A claim's batch: `requests` sent with `concurrency` in flight, and its wall time."""

    model_config = ConfigDict(extra="forbid")
    v: int = RUN_FORMAT
    kind: Literal["batch"] = "batch"
    variant: str
    phase: Literal["warmup", "timed"]
    repetition: int
    requests: int
    concurrency: int
    failed: int
    wall_ms: float


Line = (RunMeta | RequestRecord | BatchRecord | BackgroundRecord | ServerSample | GpuSample
        | SeriesInfo)
_KINDS: dict[str, type[BaseModel]] = {"meta": RunMeta, "request": RequestRecord,
                                      "batch": BatchRecord, "background": BackgroundRecord,
                                      "server-sample": ServerSample, "gpu-sample": GpuSample,
                                      "server-series": SeriesInfo}


@dataclass
class Run:
    """A run file, parsed: every view reads this, never raw dicts."""

    meta: RunMeta = field(default_factory=RunMeta)
    requests: list[RequestRecord] = field(default_factory=list)
    batches: list[BatchRecord] = field(default_factory=list)
    background: BackgroundRecord | None = None
    server: list[ServerSample] = field(default_factory=list)  # the server's /metrics series
    gpu: list[GpuSample] = field(default_factory=list)  # and each GPU's, at the same ticks
    series_info: SeriesInfo | None = None
    torn_lines: int = 0

    @property
    def series(self) -> Series | None:
        """The server series as it was sampled (None: the run file has none)."""
        if self.series_info is None and not self.server:
            return None
        info = self.series_info or SeriesInfo()
        return Series(samples=self.server, gpu=self.gpu, gaps=info.gaps, gpu_note=info.gpu_note,
                      interval_s=info.interval_s, clock_origin=info.clock_origin)

    @property
    def timed(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.timed]

    def add(self, line: Line) -> None:
        if isinstance(line, RunMeta):
            self.meta = line
        elif isinstance(line, RequestRecord):
            self.requests.append(line)
        elif isinstance(line, BatchRecord):
            self.batches.append(line)
        elif isinstance(line, ServerSample):
            self.server.append(line)
        elif isinstance(line, GpuSample):
            self.gpu.append(line)
        elif isinstance(line, SeriesInfo):
            self.series_info = line
        else:
            self.background = line


def parse_line(data: object, *, where: str) -> Line:
    """One JSON object of a run file -> its typed line; PresetError names format and field."""
    if not isinstance(data, dict):
        raise PresetError("(line)", "expected a JSON object", source=where)
    fmt = data.get("v", 1)
    if fmt not in KNOWN_FORMATS:
        raise PresetError("v", f"run format {fmt!r} is not readable here; this version reads "
                          f"run formats {', '.join(map(str, KNOWN_FORMATS))}", source=where)
    kind = data.get("kind", "request")  # playground runs wrote request lines without a kind
    model = _KINDS.get(str(kind))
    if model is None:
        raise PresetError("kind", f"unknown line kind {kind!r} (run format {fmt})",
                          source=where)
    try:
        return model.model_validate({**data, "kind": kind})  # type: ignore[return-value]
    except ValidationError as e:
        loc, reason = first_error(e)
        raise PresetError(loc, f"{reason} (run format {fmt})", source=where) from None


def iter_jsonl(path: Path) -> Iterator[tuple[int, object | None]]:
    """(line number, object) per non-empty line; None for a line that is not JSON (torn)."""
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield n, json.loads(line)
            except (ValueError, RecursionError):  # (a line nested too deep: unreadable too)
                yield n, None


def read_run(path: Path) -> Run:
    run = Run()
    for n, data in iter_jsonl(path):
        if data is None:
            run.torn_lines += 1  # a torn line from a killed writer
            continue
        run.add(parse_line(data, where=f"{path} line {n}"))
    return run


OWNER_RE = re.compile(r"[0-9a-f]{12}")  # a visitor's tag: 12 hex digits of a hash


class RunFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, *lines: Line) -> None:
        """The lines, written and synced to disk (one sync for all of them)."""
        text = "".join(json.dumps(line.model_dump(mode="json", by_alias=True),
                                  ensure_ascii=False) + "\n" for line in lines)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())


class RunStore:
    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir

    def new_run(self, kind: str, owner: str = "") -> RunFile:
        """A new run file; `owner` (a visitor's tag on a shared page, OWNER_RE) ends its name,
        so that visitor's lists can show their own runs only."""
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = self.runs_dir / kind
        folder.mkdir(parents=True, exist_ok=True)
        tail = f"-{owner}" if owner and OWNER_RE.fullmatch(owner) else ""
        return RunFile(folder / f"{stamp}-{uuid.uuid4().hex[:6]}{tail}.jsonl")

    def list_runs(self, kind: str, owner: str | None = None) -> list[Path]:
        """Newest first; all of them (the operator: CLI, `--all-runs`), or one owner's."""
        pattern = "*.jsonl" if owner is None else f"*-{owner}.jsonl"
        if owner is not None and not OWNER_RE.fullmatch(owner):
            return []
        return sorted((self.runs_dir / kind).glob(pattern), reverse=True)

"""Recordings: a measured comparison saved with its raw timestamps, and replayed with no server.

Format "qwen-latency-lab/recording", version 1 (a JSON file; docs in docs/replay.md):

    {"format": "qwen-latency-lab/recording", "version": 1, "title": str, "created": str,
     "environment": {...}, "prompt": str,
     "columns": [{"variant": {...}, "request": {...body, no key...}, "status": str,
                  "t_send": 0.0, "t_headers": s, "t_first_chunk": s, "t_last": s,
                  "tokens": [[t, reasoning_text, content_text], ...],  # streaming only
                  "content": str, "reasoning": str, "usage": {...}, "finish_reason": str,
                  "http_status": int, "server_metrics": {...} | null, "error": {...} | null,
                  "metrics": {...as measured...}}]}

Times are seconds from the earliest `t_send` of the comparison, so the columns keep their
relative order and pace. Replay feeds the same events the live client would, at the recorded
offsets, into ordinary `Recording`s: the UI renders a replay exactly like a live run.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playground.core.client import Clock, Event
from playground.core.metrics import RawTimings, Usage
from playground.core.record import RequestRecord
from playground.core.request import ChatRequest
from playground.core.runner import Recording
from playground.errors import PlaygroundError, PresetError, StreamError
from playground.lab.store import read_run
from playground.specs.limits import check_tree, parse_json, read_text
from playground.specs.presets import Variant, first_error

FORMAT = "qwen-latency-lab/recording"
VERSION = 1
MAX_BYTES = 4 * 2**20  # a recording larger than this is refused (Gradio's upload limit too)
MAX_TOKENS = 20_000  # per column (a 2,048-token context fits 10 times)
MAX_VALUES = 400_000  # JSON values in one recording
MAX_REPLAY_S = 600.0  # the latest recorded time: a replay ends within 10 minutes at 1x


class Column(BaseModel):
    model_config = ConfigDict(extra="forbid")

    variant: dict[str, Any]
    request: dict[str, Any]
    status: str
    t_send: float | None
    t_headers: float | None = None
    t_first_chunk: float | None = None
    t_last: float | None = None
    tokens: list[tuple[float, str, str]] = []
    content: str = ""
    reasoning: str = ""
    usage: dict[str, int | None] = {}
    finish_reason: str | None = Field(default=None, max_length=40)
    http_status: int | None = None
    server_metrics: dict[str, float] | None = None
    error: dict[str, Any] | None = None
    metrics: dict[str, Any] = {}


class RecordingFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["qwen-latency-lab/recording"] = FORMAT
    version: Literal[1] = VERSION
    title: str = Field(default="recorded comparison", max_length=300)
    created: str = Field(default="", max_length=60)
    environment: dict[str, Any] = {}
    prompt: str = Field(default="", max_length=200_000)
    columns: list[Column] = Field(min_length=1, max_length=8)


def _rel(t: float | None, t0: float) -> float | None:
    return None if t is None else round(t - t0, 6)


def from_history(records: Sequence[RequestRecord], *, title: str = "recorded comparison",
                 environment: dict[str, Any] | None = None) -> RecordingFile:
    """A playground run (one RequestRecord per variant, as in runs/playground/*.jsonl)."""
    if not records:
        raise PresetError("(file)", "holds no recorded request (expected a playground run "
                          "history JSONL or a recording JSON)")
    sends = [r.raw.t_send for r in records if r.raw.t_send is not None]
    t0 = min(sends) if sends else 0.0
    columns = []
    for r in records:
        raw = r.raw
        texts = raw.token_text or [("", "")] * len(raw.token_times)
        tokens = [(round(t - t0, 6), rs, ct) for t, (rs, ct) in zip(
            raw.token_times, texts, strict=False)]
        columns.append(Column(
            variant=r.variant.model_dump(mode="json", by_alias=True), request=r.request,
            status=r.status, t_send=_rel(raw.t_send, t0), t_headers=_rel(raw.t_headers, t0),
            t_first_chunk=_rel(raw.t_first_chunk, t0), t_last=_rel(raw.t_last, t0),
            tokens=tokens if raw.streaming else [], content=r.content, reasoning=r.reasoning,
            usage=asdict(raw.usage), finish_reason=raw.finish_reason,
            http_status=raw.http_status, server_metrics=raw.server_metrics,
            error=r.error.model_dump() if r.error else None,
            metrics=asdict(r.metrics)))
    prompt = next((m["content"] for m in reversed(records[0].request.get("messages", []))
                   if m.get("role") == "user"), "")
    return RecordingFile(title=title, created=time.strftime("%Y-%m-%d %H:%M"),
                         environment=environment or {}, prompt=prompt, columns=columns)


def load(path: Path) -> RecordingFile:
    """A recording JSON, or a playground run history JSONL (converted), checked before use:
    size, encoding, nesting and value count (specs/limits), then every field -- times within
    MAX_REPLAY_S, at most MAX_TOKENS per column, each column's variant a valid variant, the
    environment's numbers numbers. Anything else is a PresetError naming file and field."""
    source = str(path)
    text = read_text(path, MAX_BYTES)
    if path.suffix == ".jsonl":
        return validated(from_history(read_run(path).requests, title=path.stem), source)
    data = parse_json(text, source)
    check_tree(data, source, max_values=MAX_VALUES)
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise PresetError("format", f"expected {FORMAT!r} (a qwen-latency-lab recording)",
                          source=source)
    if data.get("version") != VERSION:
        raise PresetError("version", f"{str(data.get('version'))[:40]!r} is not supported; "
                          f"this version reads version {VERSION}", source=source)
    try:
        rec = RecordingFile.model_validate(data)
    except ValidationError as e:
        raise PresetError(*first_error(e), source=source) from None
    return validated(rec, source)


def validated(rec: RecordingFile, source: str) -> RecordingFile:
    """The checks a schema alone does not make (see `load`)."""
    for i, col in enumerate(rec.columns):
        where = f"columns.{i}"
        if len(col.tokens) > MAX_TOKENS:
            raise PresetError(f"{where}.tokens", f"{len(col.tokens):,} tokens; a column holds "
                              f"at most {MAX_TOKENS:,}", source=source)
        times = [("t_send", col.t_send), ("t_headers", col.t_headers),
                 ("t_first_chunk", col.t_first_chunk), ("t_last", col.t_last),
                 *((f"tokens.{k}", t) for k, (t, _, _) in enumerate(col.tokens))]
        for name, t in times:
            if t is not None and not (0.0 <= t <= MAX_REPLAY_S):  # (NaN fails too)
                raise PresetError(f"{where}.{name}", f"{t!r} s is outside 0-{MAX_REPLAY_S:g} "
                                  "s: a replay lasts at most 10 minutes", source=source)
        try:
            Variant.model_validate(col.variant)
        except ValidationError as e:
            field, reason = first_error(e)
            raise PresetError(f"{where}.variant.{field}", reason, source=source) from None
        except PlaygroundError as e:
            raise PresetError(f"{where}.variant", str(e), source=source) from None
    floor = rec.environment.get("floor_ms")
    if floor is not None and (isinstance(floor, bool) or not isinstance(floor, int | float)
                              or not 0 <= floor < 1e6):
        raise PresetError("environment.floor_ms", f"{str(floor)[:40]!r} is not a number of "
                          "milliseconds (or null)", source=source)
    return rec


def save(rec: RecordingFile, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(rec.model_dump_json(indent=1), "utf-8")
    return path


def recordings(rec: RecordingFile) -> list[Recording]:
    """Fresh, empty Recordings for the columns (fed by `play`)."""
    out = []
    for col in rec.columns:
        variant = Variant.model_validate(col.variant)
        req = ChatRequest(variant.name, dict(col.request))
        out.append(Recording(variant, req, "replay", RawTimings(streaming=req.stream)))
    return out


def _schedule(col: Column) -> list[tuple[float, Event]]:
    """The column's events with their recorded offsets (t is filled in when played)."""
    evs: list[tuple[float, Event]] = []
    if col.t_send is None:
        return evs
    evs.append((col.t_send, Event("sent", 0.0)))
    if col.t_headers is not None:
        evs.append((col.t_headers, Event("headers", 0.0, status=col.http_status)))
    streaming = bool(col.request.get("stream"))
    if streaming:
        if col.t_first_chunk is not None and (not col.tokens or col.t_first_chunk
                                              < col.tokens[0][0]):
            evs.append((col.t_first_chunk, Event("chunk", 0.0)))  # the role-only chunk
        for i, (t, rs, ct) in enumerate(col.tokens):
            last = i == len(col.tokens) - 1
            evs.append((t, Event("chunk", 0.0, reasoning=rs, content=ct,
                                 finish_reason=col.finish_reason if last else None)))
    end = col.t_last if col.t_last is not None else (col.tokens[-1][0] if col.tokens
                                                     else col.t_send)
    if not streaming and col.error is None:
        evs.append((end, Event("chunk", 0.0, reasoning=col.reasoning, content=col.content,
                               finish_reason=col.finish_reason)))
    usage = Usage(**{k: col.usage.get(k) for k in Usage.__dataclass_fields__})
    evs.append((end, Event("usage", 0.0, usage=usage, server_metrics=col.server_metrics)))
    if col.error is not None:
        evs.append((end, Event("error", 0.0, error=StreamError(
            f"(recorded) {col.error.get('type')}: {col.error.get('message')}"))))
    else:
        evs.append((end, Event("done", 0.0)))
    return evs


async def play(rec: RecordingFile, recs: Sequence[Recording], *, speed: float = 1.0,
               clock: Clock = time.perf_counter,
               sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
               ) -> Sequence[Recording]:
    """Feed each column's events at its recorded offsets divided by `speed` (the pace), each
    stamped with its recorded offset: at any speed the columns show the recorded numbers, the
    measurement, not an artefact of the playback speed. At 1x both are the same."""
    if speed <= 0:
        raise ValueError("speed must be > 0")
    start = clock()

    async def column(col: Column, r: Recording) -> None:
        try:
            for offset, ev in _schedule(col):
                wait = start + offset / speed - clock()
                if wait > 0:
                    await sleep(wait)
                stamp = clock() if speed == 1 else start + offset
                r.feed(Event(ev.kind, stamp, ev.reasoning, ev.content, ev.finish_reason,
                             ev.usage, ev.server_metrics, ev.status, ev.error))
        except asyncio.CancelledError:
            r.status = "cancelled"
            raise

    await asyncio.gather(*(column(c, r) for c, r in zip(rec.columns, recs, strict=True)))
    return recs

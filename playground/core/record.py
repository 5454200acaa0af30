"""The typed record of one measured request: what the store writes and every view reads.

One `RequestRecord` holds the request body (never the API key), the raw client timestamps,
the server's usage and per-request metrics, the outcome and, for benchmarks, the trial and the
score. Derived metrics are not stored as truth: `metrics` is recomputed from `raw` by
core/metrics.derive every time (the JSON carries a copy for people reading the file; a reader
ignores it).

Run format: lines without `v` are format 1 (written before the typed record existed); they have
the same fields and load unchanged. This code writes format 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, computed_field, model_validator

from playground.core.metrics import Metrics, RawTimings, derive
from playground.core.phases import Breakdown, breakdown
from playground.core.runner import Recording, Status
from playground.core.scoring import Score
from playground.specs.presets import Variant

RUN_FORMAT = 2
Phase = Literal["warmup", "timed"]
# Per-request numbers a view may ask for by name (all milliseconds).
METRIC_NAMES = ("ttft_ms", "ttfa_ms", "visible_wait_ms", "e2e_ms", "tpot_ms", "first_chunk_ms",
                "pre_send_ms", "send_delay_ms", "ttft_from_due_ms", "e2e_from_due_ms")


class ErrorInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    type: str
    message: str


class ScoreInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    json_valid: bool
    schema_valid: bool | None = None
    fields: dict[str, bool] = {}
    field_accuracy: float | None = None

    @classmethod
    def of(cls, s: Score) -> ScoreInfo:
        return cls(json_valid=s.json_valid, schema_valid=s.schema_valid, fields=s.fields,
                   field_accuracy=s.field_accuracy)


class RequestRecord(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    v: Literal[1, 2] = RUN_FORMAT
    kind: Literal["request"] = "request"
    variant: Variant
    base_url: str
    status: Status
    request: dict[str, Any]
    raw: RawTimings
    content: str = ""
    reasoning: str = ""
    error: ErrorInfo | None = None
    clock_origin: tuple[float, float] | None = None
    # benchmark trials only
    trial: int | None = None
    phase: Phase | None = None
    example: int | None = None
    repetition: int | None = None
    score: ScoreInfo | None = None
    server_preset: str | None = None
    client: str | None = None  # "openai" (SDK) or "raw" (core/wire): who read the stream
    node: str | None = None  # the Ray node whose reader read it (lab/ray_readers)

    @model_validator(mode="before")
    @classmethod
    def _drop_derived(cls, data: Any) -> Any:
        if isinstance(data, dict) and "metrics" in data:
            data = {k: val for k, val in data.items() if k != "metrics"}
            data.setdefault("v", 1)
        return data

    @computed_field  # type: ignore[prop-decorator]
    @cached_property
    def metrics(self) -> Metrics:
        return derive(self.raw, answered=bool(self.content))

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def name(self) -> str:
        return self.variant.name

    @property
    def timed(self) -> bool:
        return self.phase in (None, "timed")

    def value(self, metric: str) -> float | None:
        """One per-request number by name (METRIC_NAMES); None when not observed."""
        if metric not in METRIC_NAMES:
            raise KeyError(f"unknown metric {metric!r}; known: {', '.join(METRIC_NAMES)}")
        return getattr(self.metrics, metric)

    def phases(self) -> Breakdown | None:
        return breakdown(self.raw) if self.ok else None

    @classmethod
    def of(cls, rec: Recording, **trial: Any) -> RequestRecord:
        """The record of a finished (or stopped) live Recording."""
        error = None if rec.error is None else ErrorInfo(type=type(rec.error).__name__,
                                                        message=str(rec.error))
        return cls(variant=rec.variant, base_url=rec.base_url, status=rec.status,
                   request=rec.request.body(), raw=rec.raw, content=rec.content,
                   reasoning=rec.reasoning, error=error, clock_origin=rec.clock_origin,
                   client=rec.client, node=rec.node, **trial)

    def line(self) -> dict[str, Any]:
        """JSON-ready, as the store writes it."""
        return self.model_dump(mode="json", by_alias=True)


def values(records: Iterable[RequestRecord], metric: str) -> list[float]:
    """The observed values of one metric over the successful records."""
    out = []
    for r in records:
        if r.ok:
            v = r.value(metric)
            if v is not None:
                out.append(v)
    return out


def by_variant(records: Iterable[RequestRecord]) -> dict[str, list[RequestRecord]]:
    out: dict[str, list[RequestRecord]] = {}
    for r in records:
        out.setdefault(r.name, []).append(r)
    return out


def failed(records: Sequence[RequestRecord]) -> int:
    return sum(not r.ok for r in records)

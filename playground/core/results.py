"""The results document, typed: `RunSummary` (what lab/summary computes from a run) and
`ResultsFile` (results.json: the summary and every timed request). Every view -- tables,
figures, the HTML report, the Benchmark tab, the CLI -- reads these attributes.

results.json carries `format` (RESULTS_FORMAT). A file without it is the layout written before
the format was named: it loads when it validates (the fields added since have defaults);
anything else fails naming the file, its format and the field (`load_results`). The published
JSON Schema (docs/schemas/results.schema.json) is `ResultsFile.model_json_schema()`
(core/schemas writes it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from playground.core.estimates import Call, Effect, Summary
from playground.core.record import RequestRecord
from playground.core.run_meta import BackgroundRecord, RunMeta
from playground.errors import PresetError
from playground.specs.presets import first_error

RESULTS_FORMAT = "qwen-latency-lab/results/1"


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ServerShare(_Doc):
    """Medians of the server's own parts of each request, and of what is left of E2E."""

    queue_ms: float | None = None
    prefill_ms: float | None = None
    decode_ms: float | None = None
    rest_ms: float | None = None


class VariantSummary(_Doc):
    n: int
    failed: int
    # by core/metrics name (ttft_ms, e2e_ms, tpot_ms, ...): n, mean, p50, p95, p99, stdev and
    # the median's bootstrap 95% interval
    metrics: dict[str, Summary]
    json_valid_pct: float | None
    schema_valid_pct: float | None
    field_exact_pct: float | None
    server: ServerShare = ServerShare()
    at_once: int = 0  # streamed replies whose tokens all arrived together


class Comparison(_Doc):
    metric: str
    baseline: str
    variant: str
    effect: Effect  # with 95% intervals by test inversion
    call: Call
    p_adjusted: float | None
    verdict: str  # the comparison in words


class Objectives(_Doc):
    ttft_ms: float | None = None
    e2e_ms: float | None = None


class GridCell(_Doc):
    """One cell of the thinking x guided-JSON grid (medians over its successful requests)."""

    thinking: bool
    guided_json: bool
    n: int
    failed: int
    json_valid_pct: float | None
    schema_valid_pct: float | None
    ttfa_ms: float | None
    e2e_ms: float | None
    tpot_ms: float | None
    cut_off: int
    guided_overhead_tpot_ms: float | None
    guided_overhead_note: str = ""


class BackgroundSummary(BackgroundRecord):
    """The load kept in flight, with its sentence."""

    text: str = ""


class ServerSummary(_Doc):
    """What the server (and its GPUs) did during the timed trials: server/series.Series'
    peaks and counter changes, with its sentence."""

    samples: int
    gaps: int
    interval_s: float | None = None  # present when the series was not sampled (0)
    peak_running: float | None = None
    peak_waiting: float | None = None
    peak_kv_usage: float | None = None
    prefix_hit_rate: float | None = None
    preemptions: float | None = None
    generation_tok_per_s: float | None = None
    gpu_note: str | None = None
    peak_gpu_util_pct: float | None = None
    peak_gpu_mem_used_mib: float | None = None
    peak_gpu_power_w: float | None = None
    peak_gpu_sm_clock_mhz: float | None = None
    text: str = ""  # the sentence (a sweep level's summary has none)


class RunSummary(_Doc):
    meta: RunMeta
    baseline: str | None
    variants: dict[str, VariantSummary]
    comparisons: list[Comparison]
    n_requests: int
    n_failed: int
    phases: dict[str, dict[str, float | None]]  # variant -> phase -> median ms
    definitions: dict[str, dict[str, float | None]]  # variant -> TTFT definition -> median ms
    slo: Objectives
    goodput_pct: dict[str, float | None]
    grid: list[GridCell] | None
    floor_ms: float | None
    background: BackgroundSummary | None = None
    server: ServerSummary | None = None


class ResultsFile(_Doc):
    """results.json. `requests`: every timed request (a file slimmed for publishing keeps only
    their count, `n_requests`)."""

    format: Literal["qwen-latency-lab/results/1"] = RESULTS_FORMAT
    summary: RunSummary
    requests: list[RequestRecord] = []
    n_requests: int | None = None


def load_results(path: Path) -> ResultsFile:
    """results.json back, typed; an error names the file, its format and the field."""
    return load_document(path, ResultsFile, "summary", "results.json")


Doc = TypeVar("Doc", bound=BaseModel)


def load_document(path: Path, model: type[Doc], key: str, what: str) -> Doc:
    """A result document of the lab (`model`, with a `format` field) back from `path`. A file
    without `format` is the layout written before formats were named: it loads when it
    validates. One of another format, or that is not one of these (no `key`), fails naming the
    file, its format and the field."""
    expected = model.model_fields["format"].default
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PresetError("(file)", f"not a readable JSON file: {e}", source=str(path)) from None
    if not isinstance(doc, dict) or key not in doc:
        raise PresetError(key, f"missing: not a {what} of this lab (expected format "
                          f"{expected})", source=str(path))
    found = doc.get("format", "(none: the layout before formats were named)")
    if "format" in doc and found != expected:
        raise PresetError("format", f"{found!r}: this version reads {expected!r} and the "
                          "unnamed layout before it (read it with the version that wrote it, "
                          "or measure again)", source=str(path))
    try:
        return model.model_validate({**doc, "format": expected})
    except ValidationError as e:
        field, why = first_error(e)
        raise PresetError(field, f"{why} ({what} format {found})", source=str(path)) from None

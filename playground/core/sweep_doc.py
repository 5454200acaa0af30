"""A sweep's document, typed: sweep.json (`SweepDoc`) and its levels (`SweepLevel`), as
cli/sweep writes them and benchmarks/ re-summarise them. cli/sweep validates the document
before writing it, so a level the schema does not describe fails there, not in a reader.

Its published JSON Schema is docs/schemas/sweep.schema.json (core/schemas). A file without
`format` is the layout written before the format was named: it loads when it validates.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from playground.core.results import ServerSummary, load_document

SWEEP_FORMAT = "qwen-latency-lab/sweep/1"


class SweepLevel(BaseModel):
    """One level: a concurrency (closed loop) or an arrival rate (open loop). Percentiles in
    ms over the level's successful requests (ITL: over every gap of every request)."""

    model_config = ConfigDict(extra="forbid")

    concurrency: int | None = None
    rate_per_s: float | Literal["inf"] | None = None
    profile: str | None = None  # the arrival profile (open loop)
    engine: str | None = None  # who sent the level: "playground" or "vllm-bench"
    workers: int | None = None
    nodes: dict[str, int] | None = None  # Ray: requests per node
    barrier_ms: float | None = None  # Ray: the start barrier's uncertainty
    n: int
    failed: int
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float | None = None
    tpot_p99_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    e2e_p50_ms: float | None = None
    e2e_p99_ms: float | None = None
    req_per_s: float | None = None
    one_chunk: int = 0  # replies whose tokens all came in one chunk (TPOT 0)
    ttft_minus_server_ttft_p50_ms: float | None = None
    send_delay_p50_ms: float | None = None  # open loop: the client's own delay
    send_delay_p99_ms: float | None = None
    ttft_from_due_p50_ms: float | None = None
    ttft_from_due_p99_ms: float | None = None
    e2e_from_due_p50_ms: float | None = None
    e2e_from_due_p99_ms: float | None = None
    client_bound: bool | None = None
    server: ServerSummary | None = None  # what the server did during the level


class SweepDoc(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: Literal["qwen-latency-lab/sweep/1"] = SWEEP_FORMAT
    base_url: str
    model: str
    vllm: str | None = None
    date: str
    machine: dict[str, Any]
    output_len: int
    engine: str
    vllm_bench_rows: Literal["role-aligned", "raw", "count-aligned"] | None = None
    arrival: str | None = None  # open loop
    burstiness: float | None = None
    seed: int | None = None
    max_concurrency: int | None = None
    stopped: str = ""  # why an open-loop sweep stopped (saturation)
    levels: list[SweepLevel] = []


def load_sweep(path: Path) -> SweepDoc:
    """sweep.json back, typed; an error names the file, its format and the field."""
    return load_document(path, SweepDoc, "levels", "sweep.json")

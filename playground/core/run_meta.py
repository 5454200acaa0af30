"""A run's own lines beside its requests: `RunMeta` (what was measured, and where) and
`BackgroundRecord` (the load kept in flight). Here, below lab/store, so that the typed results
document (core/results) carries them as they are; lab/store reads and writes them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from playground.core.record import RUN_FORMAT
from playground.specs.experiments import Experiment

__all__ = ["BackgroundRecord", "RunMeta"]


class RunMeta(BaseModel):
    """What a benchmark run measured, and where (best effort: a field may be unknown)."""

    model_config = ConfigDict(extra="allow")
    v: int = RUN_FORMAT
    kind: Literal["meta"] = "meta"
    experiment: Experiment | None = None
    model: str | None = None
    base_url: str | None = None
    vllm_version: str | None = None
    demo_model: bool | None = None
    machine: str | None = None
    python: str | None = None
    servers: dict[str, Any] = {}
    floor_ms: float | None = None


class BackgroundRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")
    v: int = RUN_FORMAT
    kind: Literal["background"] = "background"
    requests_in_flight: int
    completed: int | None  # None: counted by an external engine that was interrupted
    failed: int | None
    max_tokens: int
    engine: str = "playground"  # or "vllm bench serve" (lab/engine)
    running_at_start: float | None = None  # the server's running gauge when the probe began
    ready_after_s: float | None = None  # from the engine's launch to the load in flight
    rate: str | None = None  # open loop: the arrival profile (specs/rates label); then
    # requests_in_flight is the cap

    def describe(self) -> str:
        """One sentence for the CLI, the Benchmark tab and the report."""
        who = "the playground's runner" if self.engine == "playground" else self.engine
        counts = (f"; {self.completed} completed, {self.failed} failed"
                  if self.completed is not None else "")
        seen = (f"; the server reported {self.running_at_start:.0f} running when the probe "
                "began" if self.running_at_start is not None else "")
        if self.ready_after_s is not None:
            seen += f", {self.ready_after_s:.1f} s after {who} was launched"
        if self.rate:
            return (f"background requests arriving at {self.rate} (at most "
                    f"{self.requests_in_flight} in flight), sent by {who} ({self.max_tokens} "
                    f"tokens each{counts}{seen})")
        return (f"{self.requests_in_flight} background requests kept in flight by {who} "
                f"({self.max_tokens} tokens each{counts}{seen})")

"""What every statistic of the lab returns, as frozen dataclasses: `Summary` (one metric over
one variant's requests: lab/stats.summarize) and `Effect` (one comparison, variant vs baseline:
lab/calls.compare). Here, below lab/, so that the typed results document (core/results) carries
them as they are, one definition for the computation and for results.json.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Interval = tuple[float, float]
Kind = Literal["time", "rate"]
Call = Literal["lower", "higher", "none", "too few samples", "not measurable"]


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float | None
    p50: float | None
    p95: float | None
    p99: float | None
    stdev: float | None
    median_ci: Interval | None


@dataclass(frozen=True)
class Effect:
    """Variant vs baseline. Times: medians (ms); `change` in % of the baseline's median, `diff`
    in ms, `ratio` = baseline / variant (a speed-up). Rates (0..1 per request): means shown in
    %, `change` = `diff` in percentage points. Intervals: 95%, from inverting the test."""

    kind: Kind
    n_baseline: int
    n_variant: int
    baseline: float | None
    variant: float | None
    diff: float | None
    diff_ci: Interval | None
    change: float | None
    change_ci: Interval | None
    ratio: float | None
    ratio_ci: Interval | None
    p_value: float | None = None
    min_p: float | None = None

    @property
    def measurable(self) -> bool:
        return self.p_value is not None

    @property
    def unit(self) -> str:
        return "pp" if self.kind == "rate" else "%"

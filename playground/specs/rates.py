"""An arrival profile (the model; lab/arrivals turns one into a schedule): `kind` at `per_s`
requests a second, vllm bench serve's `--request-rate`/`--burstiness`. Used by `playground sweep
--rate`, an experiment's `rate` (its timed trials) and `background_rate` (its background load)."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Kind = Literal["constant", "poisson", "gamma"]


class Rate(BaseModel):
    """An arrival profile: `kind` at `per_s` requests a second (`burstiness`: gamma only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Kind = "poisson"
    per_s: float = Field(gt=0)  # math.inf: every request at once
    burstiness: float = Field(default=1.0, gt=0)

    @model_validator(mode="after")
    def _burstiness_is_gammas(self) -> Rate:
        if self.kind != "gamma" and self.burstiness != 1.0:
            raise ValueError(f"burstiness is the gamma profile's (kind: gamma); {self.kind} "
                             "arrivals have none -- drop it or use kind: gamma")
        return self

    def shape(self) -> float:
        """The gamma shape: B for gamma, 1 for Poisson, infinity for constant."""
        return {"constant": math.inf, "poisson": 1.0}.get(self.kind, self.burstiness)

    def label(self) -> str:
        if math.isinf(self.per_s):
            return "all at once"
        extra = f", burstiness {self.burstiness:g}" if self.kind == "gamma" else ""
        return f"{self.kind} {self.per_s:g}/s{extra}"

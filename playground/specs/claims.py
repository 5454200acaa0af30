"""The seed articles' claims as data (presets/claims/*.yaml): the experiment that tests each,
the variant under test, and the checks (metric, the direction the article claims, its number).
A bad file is reported (file, field, reason) and skipped; the good ones load."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from playground.errors import PlaygroundError, PresetError
from playground.specs.presets import first_error, load_yaml

LATENCY = {"ttft_ms": "TTFT", "ttfa_ms": "TTFA", "visible_wait_ms": "first visible character",
           "e2e_ms": "E2E", "tpot_ms": "TPOT", "batch_wall_ms": "wall time for the batch"}
RATES = {"json_valid": "valid JSON", "schema_valid": "schema-valid JSON",
         "field_accuracy": "field exact-match"}
MetricName = Literal["ttft_ms", "ttfa_ms", "visible_wait_ms", "e2e_ms", "tpot_ms",
                     "batch_wall_ms", "json_valid", "schema_valid", "field_accuracy"]
Verdict = Literal["confirmed", "refuted", "no detectable difference", "too few samples",
                  "not measurable", "not measurable on the demo model", "reported"]


class Check(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    metric: MetricName
    direction: Literal["lower", "higher", "report"]  # what the article says the variant does
    claimed: str = ""  # the article's number, in its words
    # The article's number as one value in its own unit (at most one of these):
    claimed_change_pct: float | None = None  # relative change of medians in % (pp for rates)
    claimed_diff_ms: float | None = None  # "costs ~15 ms": variant - baseline, ms per request
    claimed_factor: float | None = None  # "2x": variant / baseline (0.4 = "2.5x faster")
    claimed_before_after_ms: tuple[float, float] | None = None  # "1.8 s -> 0.3 s", judged
    # as the relative change it implies (absolute times belong to the article's hardware)
    # A TPOT difference times the variant's decoded tokens: the per-request cost of a
    # per-token overhead (compared with claimed_diff_ms).
    per_request: bool = False

    @model_validator(mode="after")
    def _one_number(self) -> Check:
        given = [n for n in ("claimed_change_pct", "claimed_diff_ms", "claimed_factor",
                             "claimed_before_after_ms") if getattr(self, n) is not None]
        if len(given) > 1:
            raise ValueError(f"give the article's number once, not as {' and '.join(given)}")
        if self.per_request and (self.metric != "tpot_ms" or self.claimed_diff_ms is None):
            raise ValueError("per_request applies to tpot_ms with claimed_diff_ms")
        if self.metric in RATES and (self.claimed_diff_ms is not None
                                     or self.claimed_factor is not None):
            raise ValueError("a rate's claimed number is claimed_change_pct (percentage "
                             "points)")
        return self


class Claim(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    title: str
    article: str
    quote: str
    variant: str | None = None  # the variant under test; the experiment's baseline is "before"
    kind: Literal["ab", "batch"] = "ab"
    batch_size: int = Field(default=10, ge=2, le=64)
    checks: list[Check] = Field(min_length=1)
    note: str = ""
    # an optional package the claim needs ("langchain": langchain-openai)
    requires: Literal["langchain"] | None = None
    # A worked model of the result next to the verdict (claims/explain)
    explain: Literal["thinking-cost", "client-overhead", "engine-queueing"] | None = None
    experiment: dict[str, Any] | None = None

    def needs_servers(self) -> bool:
        """True when the experiment starts its own managed servers (a server A/B)."""
        variants = (self.experiment or {}).get("variants", [])
        return any(isinstance(v, dict) and v.get("server") for v in variants)


def load_claims(presets_dir: Path) -> tuple[dict[str, Claim], list[str]]:
    """Every presets/claims/*.yaml; a bad file is reported (file, field, reason) and skipped."""
    claims: dict[str, Claim] = {}
    errors: list[str] = []
    for path in sorted((presets_dir / "claims").glob("*.yaml")):
        try:
            data = load_yaml(path)
            claim = Claim.model_validate(data)
            if claim.requires is None and claim.experiment is None:
                raise PresetError("experiment", "is required unless `requires` says why the "
                                  "claim cannot run here", source=str(path))
        except ValidationError as e:
            loc, msg = first_error(e)
            errors.append(str(PresetError(loc, msg, source=str(path))))
            continue
        except PlaygroundError as e:
            errors.append(str(e))
            continue
        claims[claim.id] = claim
    return claims, errors

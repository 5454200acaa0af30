"""Experiments (presets/experiments/*.yaml) and data sets (presets/data/*.jsonl).

An experiment is variants x data set x repetitions with the measurement rules of
docs/measurement.md (warm-up, interleaving, cache policy). Variants may be preset names or inline
mappings; errors name the file, the field and the reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from playground.errors import PresetError, ValidationFailed
from playground.specs.presets import (
    FieldError,
    PresetLibrary,
    Variant,
    first_error,
    load_yaml,
    resolve_refs,
    safe_child,
)
from playground.specs.rates import Rate


class Experiment(BaseModel):
    """Variants x data set x repetitions, with the measurement rules of docs/measurement.md."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    description: str = ""
    variants: list[Variant] = Field(min_length=1, max_length=8)
    baseline: str | None = None  # a variant name; default: the first variant
    dataset: str = "address"  # presets/data/NAME.jsonl
    examples: int | None = Field(default=None, ge=1, description="first N examples")
    repetitions: int = Field(default=1, ge=1, le=1000)
    warmup: int = Field(default=1, ge=0, le=100, description="untimed requests per variant")
    order: Literal["interleaved", "random"] = "interleaved"
    concurrency: int = Field(default=1, ge=1, le=256)
    # Reader processes for the timed trials (lab/load): None = one per 32 streams, at most half
    # the cores. Stamps from every process are on one clock (docs/load.md).
    workers: int | None = Field(default=None, ge=1, le=64)
    cache: Literal["cold", "warm"] = "cold"
    seed: int = 0
    # Probe under load: keep this many background requests in flight against the first
    # variant's server during the timed trials (bounded: a probe, not a load test).
    background: int = Field(default=0, ge=0, le=256)
    # Who keeps the background load in flight: "vllm-bench" (vllm bench serve as a subprocess,
    # lab/engine), "playground" (our own lanes, at most 64), "auto" = vllm bench when the
    # server's Python has vLLM, else ours.
    background_engine: Literal["auto", "playground", "vllm-bench"] = "auto"
    # Open loop (specs/rates, vllm bench serve's definitions): the timed trials are sent when
    # `rate`'s schedule says, whatever is in flight (each row carries its send delay), with
    # `concurrency`, when given, as the cap on requests in flight (vllm bench's
    # --max-concurrency). `background_rate`: the background load arrives at a rate instead,
    # `background` then capping how many of it are in flight.
    rate: Rate | None = None
    background_rate: Rate | None = None

    @model_validator(mode="after")
    def _check(self) -> Experiment:
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"variant names must be unique, got {names}")
        if self.background_engine == "playground" and self.background > 64:
            raise ValueError(f"background: the playground's own lanes keep at most 64 in "
                             f"flight, got {self.background}; use background_engine: "
                             "vllm-bench for more")
        if self.rate is not None and (self.workers or 1) > 1:
            raise ValueError("rate: an open-loop run is sent from one process; drop workers "
                             "(or the rate)")
        if self.background_rate is not None and self.background < 1:
            raise ValueError("background_rate: give background (at least 1: the cap on the "
                             "background requests in flight)")
        if (self.background_rate is not None and self.background_rate.kind == "constant"
                and self.background_engine == "vllm-bench"):
            raise ValueError("background_rate: vllm bench serve has no constant arrivals "
                             "(poisson or gamma only); use kind: poisson or gamma, or "
                             "background_engine: playground")
        if self.baseline is not None and self.baseline not in names:
            raise ValueError(f"baseline {self.baseline!r} is not one of the variants {names}")
        return self

    @property
    def baseline_name(self) -> str:
        return self.baseline or self.variants[0].name

    @property
    def cap(self) -> int | None:
        """An open-loop run's cap on requests in flight: `concurrency` when it was given."""
        return self.concurrency if "concurrency" in self.model_fields_set else None


def experiment_from_dict(data: object, library: PresetLibrary, *, source: str) -> Experiment:
    """Variants may be preset names or inline mappings (with `prompt:`/`guided_json:` refs)."""
    if not isinstance(data, dict):
        raise PresetError("(file)", "expected a mapping of fields", source=source)
    raw = dict(data)
    variants = raw.get("variants")
    if isinstance(variants, list):
        resolved: list[object] = []
        for i, item in enumerate(variants):
            if isinstance(item, str):
                try:
                    resolved.append(library.get(item))
                except ValidationFailed as e:
                    raise PresetError(f"variants.{i}", e.reason, source=source) from None
            elif isinstance(item, dict):
                item = _with_engine(item, library.presets_dir)
                try:
                    resolved.append(resolve_refs(item, library.presets_dir))
                except FieldError as e:
                    raise PresetError(f"variants.{i}.{e.field}", e.reason,
                                      source=source) from None
            else:
                resolved.append(item)
        raw["variants"] = resolved
    dataset = raw.get("dataset", "address")
    if isinstance(dataset, str):
        try:
            safe_child(library.presets_dir / "data", dataset, ".jsonl", "data set")
        except ValueError as e:
            raise PresetError("dataset", str(e), source=source) from None
    try:
        return Experiment.model_validate(raw)
    except ValidationError as e:
        raise PresetError(*first_error(e), source=source) from None


def _with_engine(item: dict[str, Any], presets_dir: Path) -> dict[str, Any]:
    """A variant that names a server preset speaks that server's dialect (`engine:` of
    presets/servers/<name>.yaml), unless it says so itself."""
    name = item.get("server")
    if not isinstance(name, str) or "engine" in item:
        return item
    try:
        data = load_yaml(safe_child(presets_dir / "servers", name, ".yaml", "server preset"))
    except (ValueError, PresetError):
        return item  # an unknown preset is reported where servers are started
    engine = data.get("engine") if isinstance(data, dict) else None
    return {**item, "engine": engine} if engine == "transformers" else item


def load_experiment(path: Path, library: PresetLibrary) -> Experiment:
    return experiment_from_dict(load_yaml(path), library, source=str(path))


def load_dataset(presets_dir: Path, name: str, limit: int | None = None
                 ) -> list[dict[str, Any]]:
    """JSONL rows with `input` (and optionally `gold`); errors name the line."""
    path = safe_child(presets_dir / "data", name, ".jsonl", "data set")
    rows = []
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise PresetError(f"line {n}", f"not valid JSON: {e}", source=str(path)) from None
        if not isinstance(row, dict) or not isinstance(row.get("input"), str):
            raise PresetError(f"line {n}", "needs a string field 'input'", source=str(path))
        rows.append(row)
        if limit is not None and len(rows) >= limit:
            break
    return rows

"""Ladders (presets/ladders/*.yaml): an article's table of optimizations, replayed as cumulative
steps. Each step is the previous step's variant plus its `change`; a step on another engine
(Transformers) is shown as "needs a Transformers server" until one is configured."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from playground.errors import PresetError
from playground.specs.presets import (
    Variant,
    first_error,
    load_yaml,
    safe_child,
    variant_from_dict,
)

MAX_STEPS = 4  # one Playground column per step


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: str = Field(min_length=1, max_length=60)
    engine: Literal["vllm", "transformers"] = "vllm"
    change: dict[str, Any] = {}
    article_p50_ms: float | None = None
    article_p95_ms: float | None = None


class Ladder(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    title: str
    base: dict[str, Any]
    steps: list[Step] = Field(min_length=2, max_length=MAX_STEPS)


def load_ladder(presets_dir: Path, name: str) -> Ladder:
    try:
        path = safe_child(presets_dir / "ladders", name, ".yaml", "ladder")
    except ValueError as e:
        raise PresetError("ladder", str(e)) from None
    data = load_yaml(path)
    try:
        return Ladder.model_validate(data)
    except ValidationError as e:
        raise PresetError(*first_error(e), source=str(path)) from None


def ladder_names(presets_dir: Path) -> list[str]:
    return sorted(p.stem for p in (presets_dir / "ladders").glob("*.yaml"))


def step_variants(ladder: Ladder, presets_dir: Path) -> list[Variant]:
    """The variant of every step: the base plus every change up to and including the step."""
    fields = dict(ladder.base)
    out = []
    for i, step in enumerate(ladder.steps):
        fields.update(step.change)
        name = f"{ladder.name}-{'abcdefgh'[i]}"
        out.append(variant_from_dict({**fields, "name": name, "description": step.label},
                                     presets_dir, source=f"ladder {ladder.name}"))
    return out

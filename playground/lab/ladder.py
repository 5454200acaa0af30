"""A ladder played live: one Playground column per step, run one after another (sequential
mode), then what each step saved and where each step's time went.

`plan` turns a ladder into the comparison's slots (a Recording per vLLM step, the reason for a
step that cannot run here); `rows` reads the finished steps back as the article's table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from playground.core.phases import breakdown
from playground.core.runner import Recording
from playground.core.scoring import score
from playground.specs.ladders import Ladder, step_variants
from playground.specs.presets import Variant, first_error

NEEDS_TRANSFORMERS = ("needs a Transformers server: start the `transformers` server preset "
                      "in the Server tab (or `playground serve transformers`), then play the "
                      "ladder again")


@dataclass
class StepRow:
    label: str
    visible_ms: float | None  # first visible (answer) character: TTFA streaming, E2E otherwise
    e2e_ms: float | None
    saved_ms: float | None  # vs the previous measured step's first visible character
    article_p50_ms: float | None
    phases: list[tuple[str, float]]
    json_valid: bool | None
    status: str  # "measured" | "failed" | "stopped" | a reason it was not run


def plan(ladder: Ladder, presets_dir: Path, transformers_url: str | None = None
         ) -> list[Variant | str]:
    """Each step's variant, or why the step cannot run here. A Transformers step runs on the
    Transformers server at `transformers_url` (in its dialect) when there is one."""
    out: list[Variant | str] = []
    for step, v in zip(ladder.steps, step_variants(ladder, presets_dir), strict=True):
        if step.engine != "transformers":
            out.append(v)
        elif transformers_url is None:
            out.append(NEEDS_TRANSFORMERS)
        else:
            try:
                out.append(Variant.model_validate({**v.model_dump(), "engine": "transformers",
                                                   "base_url": transformers_url}))
            except ValidationError as e:
                out.append(f"cannot run on Transformers: {first_error(e)[1]}")
    return out


def fill(steps: Sequence[Variant | str], recs: Sequence[Recording]) -> list[Recording | str]:
    """The steps with their recordings (in order, one per runnable step)."""
    it = iter(recs)
    return [s if isinstance(s, str) else next(it) for s in steps]


def environment(ladder: str, steps: Sequence[Recording | str]) -> dict[str, object]:
    """What a recording of a played ladder carries to draw its view again when replayed."""
    return {"ladder": ladder, "ladder_steps": [s if isinstance(s, str) else "" for s in steps]}


def from_environment(env: dict[str, object], recs: Sequence[Recording]
                     ) -> tuple[str, list[Recording | str]] | None:
    name, steps = env.get("ladder"), env.get("ladder_steps")
    if not isinstance(name, str) or not isinstance(steps, list):
        return None
    if sum(1 for s in steps if not s) != len(recs):
        return None
    it = iter(recs)
    return name, [str(s) if s else next(it) for s in steps]


def rows(ladder: Ladder, slots: Sequence[Recording | str]) -> list[StepRow]:
    out: list[StepRow] = []
    previous: float | None = None
    for step, slot in zip(ladder.steps, slots, strict=True):
        if isinstance(slot, str):
            out.append(StepRow(step.label, None, None, None, step.article_p50_ms, [], None,
                               slot))
            continue
        m = slot.metrics()
        ok = slot.error is None and slot.status == "done"
        visible = m.visible_wait_ms if ok else None
        b = breakdown(slot.raw) if ok else None
        schema = slot.variant.guided_json.json_schema if slot.variant.guided_json else None
        valid = score(slot.content, schema).json_valid if ok else None
        saved = None if visible is None or previous is None else previous - visible
        status = "measured" if ok else ("stopped" if slot.status == "cancelled" else "failed")
        out.append(StepRow(step.label, visible, m.e2e_ms if ok else None, saved,
                           step.article_p50_ms, b.parts if b else [], valid, status))
        if visible is not None:
            previous = visible
    return out

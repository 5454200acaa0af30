"""The plan of a benchmark: warm-up first, then the timed trials, interleaved (A B A B ...,
rotated per example so no variant always goes first) or in a seeded random order; with a cold
cache policy every trial gets a unique nonce (a first line that defeats the prefix cache)."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Literal

from playground.specs.experiments import Experiment


@dataclass(frozen=True)
class Trial:
    index: int
    phase: Literal["warmup", "timed"]
    variant: str
    example: int
    repetition: int
    nonce: str | None


def plan(exp: Experiment, n_examples: int, run_id: str) -> list[Trial]:
    """Warm-up first, then the timed trials: A B A B ... (rotated per example) or shuffled."""
    names = [v.name for v in exp.variants]
    cold = exp.cache == "cold"
    trials: list[Trial] = []
    for w in range(exp.warmup):
        for name in names:
            trials.append(Trial(len(trials), "warmup", name, w % max(1, n_examples), -1,
                                f"{run_id} warm {w} {name}" if cold else None))
    timed: list[Trial] = []
    for rep in range(exp.repetitions):
        for ex in range(n_examples):
            k = (rep * n_examples + ex) % len(names)
            for name in names[k:] + names[:k]:  # rotate: no variant always goes first
                timed.append(Trial(0, "timed", name, ex, rep,
                                   f"{run_id} {len(timed)}" if cold else None))
    if exp.order == "random":
        random.Random(exp.seed).shuffle(timed)
    for t in timed:
        trials.append(Trial(len(trials), t.phase, t.variant, t.example, t.repetition, t.nonce))
    return trials

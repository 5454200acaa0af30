"""Run A vs run B (`playground runs compare A B`): ours, or imported from another tool.

Per metric (TTFT, TPOT, E2E), the medians of the two runs' successful timed requests, the
change with its 95% interval and the call -- lab/calls' permutation test, the one the claims
board uses, with Holm over the metrics compared -- or "too few samples" with the n a call
needs. Requests are paired by variant name when both runs have the same variants; a run of one
variant is compared with a run of one variant whatever their names; otherwise each run's
requests are pooled, and the heading says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from playground.core.record import RequestRecord, by_variant, values
from playground.lab.calls import Effect, call, compare, holm, too_few_text
from playground.lab.store import Run

METRICS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "E2E"}


@dataclass(frozen=True)
class Side:
    name: str  # how the report names the run ("A: vllm bench serve (result)")
    run: Run


def groups(a: Run, b: Run) -> list[tuple[str, list[RequestRecord], list[RequestRecord]]]:
    va, vb = by_variant(a.timed), by_variant(b.timed)
    if va and set(va) == set(vb):
        return [(n, va[n], vb[n]) for n in va]
    if len(va) == 1 and len(vb) == 1:
        (na, ra), (nb, rb) = next(iter(va.items())), next(iter(vb.items()))
        return [(f"{na} vs {nb}", ra, rb)]
    return [("all requests, pooled over variants", a.timed, b.timed)]


def versus(a: Side, b: Side) -> list[str]:
    """The comparison as lines of text (the CLI prints them)."""
    lines = [f"{a.name} vs {b.name}:"]
    for side in (a, b):
        notes = (side.run.meta.model_extra or {}).get("notes")
        if notes:
            lines.append(f"  ({side.name}: {notes})")
    found: list[tuple[str, str, Effect]] = []
    for group, ra, rb in groups(a.run, b.run):
        for metric, label in METRICS.items():
            found.append((group, label, compare(values(ra, metric), values(rb, metric))))
    adjusted = holm([e.p_value for _, _, e in found])
    shown = None
    for (group, label, e), p in zip(found, adjusted, strict=True):
        if group != shown:
            lines.append(f"- {group} (n = {e.n_baseline} vs {e.n_variant}):")
            shown = group
        lines.append(f"  - {label} p50: {said(e, call(e, p))}")
    lines.append(f"  (95% intervals by test inversion; Holm over the {len(found)} comparisons)")
    return lines


def said(e: Effect, verdict: str) -> str:
    if verdict == "not measurable":
        return "not measurable (no values on one side)"
    if verdict == "too few samples":
        return too_few_text(e)
    ci = (f" [95% CI {e.change_ci[0]:+.1f}, {e.change_ci[1]:+.1f}]"
          if e.change_ci is not None else "")
    change = f", {e.change:+.1f}%{ci}" if e.change is not None else ""
    what = {"none": "no detectable difference", "lower": "B is lower",
            "higher": "B is higher"}[verdict]
    return f"{e.baseline:.2f} -> {e.variant:.2f} ms{change}: {what}"

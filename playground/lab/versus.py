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
from playground.outputs.fmt import md_text

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


@dataclass(frozen=True)
class Judged:
    """One metric of one group, judged: what the text and the HTML view both show."""

    group: str
    label: str
    effect: Effect
    verdict: str  # lab/calls' call: none / lower / higher / too few samples / not measurable

    @property
    def text(self) -> str:
        return said(self.effect, self.verdict)

    def text_for(self, other: str) -> str:
        """The verdict naming the compared run by its letter ("C is lower")."""
        return said(self.effect, self.verdict, other)


def judged(a: Run, b: Run) -> list[Judged]:
    """Every group x metric of A vs B, with Holm over all of them."""
    found: list[tuple[str, str, Effect]] = []
    for group, ra, rb in groups(a, b):
        for metric, label in METRICS.items():
            found.append((group, label, compare(values(ra, metric), values(rb, metric))))
    adjusted = holm([e.p_value for _, _, e in found])
    return [Judged(g, label, e, call(e, p))
            for (g, label, e), p in zip(found, adjusted, strict=True)]


def versus(a: Side, b: Side) -> list[str]:
    """The comparison as lines of text (the CLI prints them)."""
    lines = [f"{a.name} vs {b.name}:"]
    for side in (a, b):
        notes = (side.run.meta.model_extra or {}).get("notes")
        if notes:
            lines.append(f"  ({side.name}: {notes})")
    rows = judged(a.run, b.run)
    shown = None
    for j in rows:
        if j.group != shown:
            lines.append(f"- {j.group} (n = {j.effect.n_baseline} vs {j.effect.n_variant}):")
            shown = j.group
        lines.append(f"  - {j.label} p50: {j.text}")
    lines.append(f"  (95% intervals by test inversion; Holm over the {len(rows)} comparisons)")
    return lines


def said(e: Effect, verdict: str, other: str = "B") -> str:
    if verdict == "not measurable":
        return "not measurable (no values on one side)"
    if verdict == "too few samples":
        return too_few_text(e)
    ci = (f" [95% CI {e.change_ci[0]:+.1f}, {e.change_ci[1]:+.1f}]"
          if e.change_ci is not None else "")
    change = f", {e.change:+.1f}%{ci}" if e.change is not None else ""
    what = {"none": "no detectable difference", "lower": f"{other} is lower",
            "higher": f"{other} is higher"}[verdict]
    return f"{e.baseline:.2f} -> {e.variant:.2f} ms{change}: {what}"


def markdown(a: str, b: str, run_a: Run, run_b: Run) -> str:
    """Run A vs run B as a Markdown table (the Benchmark tab's past runs): the same verdicts
    as `playground runs compare`, each run's import notes above them."""
    notes = [f"- {ab}: {md_text(n)}" for ab, run in (("A", run_a), ("B", run_b))
             if (n := (run.meta.model_extra or {}).get("notes"))]
    rows = [f"| {md_text(j.group)} | {j.label} p50 | {j.effect.n_baseline} vs "
            f"{j.effect.n_variant} | {md_text(j.text_for('B'))} |"
            for j in judged(run_a, run_b)]
    return (f"#### A vs B: {md_text(a)} vs {md_text(b)}\n"
            + ("\n".join(notes) + "\n\n" if notes else "")
            + "| requests | metric | n | verdict |\n|---|---|---|---|\n" + "\n".join(rows)
            + f"\n\n95% intervals by test inversion; Holm over the {len(rows)} comparisons.")

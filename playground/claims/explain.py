"""PURE: a worked model next to a claim's verdict, from the claim's own measurements.

"thinking-cost": what thinking costs per token and where it puts the first answer token, and
how many reasoning tokens the article's "2x" implies at the measured speed:
E2E ~ TTFT + (reasoning + answer tokens - 1) x TPOT.
"""

from __future__ import annotations

from collections.abc import Sequence

from playground.core.record import RequestRecord, values
from playground.lab.stats import median
from playground.outputs.fmt import ms


def _tokens(rows: Sequence[RequestRecord], attr: str) -> float | None:
    got = [getattr(r.metrics, attr) for r in rows if r.ok]
    return median([g for g in got if g is not None])


def thinking_cost(off: Sequence[RequestRecord], on: Sequence[RequestRecord],
                  budget: int | None) -> str:
    ttft, e2e_off = median(values(off, "ttft_ms")), median(values(off, "e2e_ms"))
    tpot_off, tpot_on = median(values(off, "tpot_ms")), median(values(on, "tpot_ms"))
    ttfa_on = median(values(on, "ttfa_ms"))
    answer, reasoning = _tokens(off, "completion_tokens"), _tokens(on, "reasoning_tokens")
    if None in (ttft, e2e_off, tpot_off, tpot_on, answer, ttfa_on) or (
            reasoning is None and budget is None):
        return ""
    assert ttft is not None and e2e_off is not None and tpot_off and tpot_on is not None
    assert answer is not None and ttfa_on is not None
    implied = (2 * e2e_off - ttft) / tpot_off - answer + 1
    counted = "" if reasoning is not None else (
        " (this server does not report reasoning tokens: the budget is used)")
    reasoning = reasoning if reasoning is not None else float(budget or 0)
    how = (f"the reasoning was forced to {reasoning:.0f} tokens by vLLM's per-request budget "
           f"(thinking_token_budget={budget}; the answer starts with '<think>' so that the "
           f"budget applies even to a model that never writes it){counted}" if budget else
           f"the model reasoned for {reasoning:.0f} tokens (median) on its own")
    return (f"How it was measured: {how}; the answer without thinking is {answer:.0f} tokens. "
            "Model: E2E ~ TTFT + (reasoning + answer tokens - 1) x TPOT. Measured: TTFT "
            f"{ms(ttft)}, TPOT {ms(tpot_off)} without thinking and {ms(tpot_on)} with it -- a "
            "reasoning token costs what an answer token costs -- and the first answer token "
            f"arrives at {ms(ttfa_on)} (TTFT + reasoning x TPOT predicts "
            f"{ms(ttft + reasoning * tpot_on)}). At this speed thinking doubles E2E "
            f"when it writes ~{implied:.0f} reasoning tokens per {answer:.0f}-token answer: the "
            "article's '2x' says how long the model thinks, not what a token costs.")

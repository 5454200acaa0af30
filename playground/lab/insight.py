"""PURE: the "why" views over finished requests: median phases per variant, the three TTFT
definitions side by side, SLO goodput, and the thinking x guided-JSON grid.

- Definitions: `vllm bench serve` times TTFT at the first SSE chunk (vLLM's role-only chunk
  arrives with the first token, other servers may send it earlier); GuideLLM at the first
  generated token (reasoning or content); TTFA is the first *answer* token. Same requests,
  three numbers.
- Goodput: the share of requests meeting every objective. The TTFT objective applies to the
  first visible character -- of the answer (TTFA when streaming, E2E when not: a
  non-streaming user waits for the whole answer; a reply with no answer text never meets it);
  failed requests never meet an objective.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from playground.core.record import RequestRecord, by_variant, values
from playground.core.scoring import thinking_cut_off
from playground.lab.stats import median
from playground.outputs.fmt import TTFT_DEFINITIONS

DEFINITIONS = TTFT_DEFINITIONS


def median_phases(rows: Sequence[RequestRecord]) -> dict[str, dict[str, float | None]]:
    """Per variant: the median of each phase over its successful requests."""
    out = {}
    for name, mine in by_variant(rows).items():
        parts: dict[str, list[float]] = {}
        for r in mine:
            b = r.phases()
            for phase, ms in b.parts if b else []:
                parts.setdefault(phase, []).append(ms)
        out[name] = {phase: median(v) for phase, v in parts.items()}
    return out


def definitions(rows: Sequence[RequestRecord]) -> dict[str, dict[str, float | None]]:
    """Per variant: the median of each TTFT definition over the same requests."""
    return {name: {k: median(values(mine, k)) for k in DEFINITIONS}
            for name, mine in by_variant(rows).items()}


def meets(r: RequestRecord, ttft_slo_ms: float | None, e2e_slo_ms: float | None) -> bool:
    m = r.metrics
    if not r.ok or m.e2e_ms is None or m.visible_wait_ms is None:
        return False
    if ttft_slo_ms is not None and m.visible_wait_ms > ttft_slo_ms:
        return False
    return e2e_slo_ms is None or m.e2e_ms <= e2e_slo_ms


def goodput(rows: Sequence[RequestRecord], ttft_slo_ms: float | None,
            e2e_slo_ms: float | None) -> dict[str, float | None]:
    """Per variant: % of requests meeting all objectives (None objectives are ignored)."""
    return {name: 100 * sum(meets(r, ttft_slo_ms, e2e_slo_ms) for r in mine) / len(mine)
            for name, mine in by_variant(rows).items()}


def _pct(flags: Sequence[bool]) -> float | None:
    return 100 * sum(flags) / len(flags) if flags else None


def is_grid(rows: Sequence[RequestRecord]) -> bool:
    """Both thinking settings and both guided-JSON settings among the variants."""
    return len({(r.variant.thinking, r.variant.guided_json is not None) for r in rows}) == 4


def grid(rows: Sequence[RequestRecord]) -> list[dict[str, Any]]:
    """The thinking x guided-JSON grid: one cell per (thinking, guided) combination found."""
    cells: dict[tuple[bool, bool], list[RequestRecord]] = {}
    for r in rows:
        cells.setdefault((r.variant.thinking, r.variant.guided_json is not None), []).append(r)
    tpot_free = {}
    out = []
    for (thinking, guided), mine in sorted(cells.items()):
        ok = [r for r in mine if r.ok]
        scored = [r.score for r in ok if r.score is not None]
        cell = {
            "thinking": thinking, "guided_json": guided, "n": len(mine),
            "failed": len(mine) - len(ok),
            "json_valid_pct": _pct([s.json_valid for s in scored]),
            "schema_valid_pct": _pct([bool(s.schema_valid) for s in scored
                                      if s.schema_valid is not None]),
            "ttfa_ms": median(values(ok, "ttfa_ms")), "e2e_ms": median(values(ok, "e2e_ms")),
            "tpot_ms": median(values(ok, "tpot_ms")),
            "cut_off": sum(thinking_cut_off(r.variant.thinking, r.content) for r in ok),
        }
        if not guided:
            tpot_free[thinking] = cell["tpot_ms"]
        out.append(cell)
    for cell in out:  # guided-decoding overhead: TPOT vs the free cell with the same thinking
        free = tpot_free.get(cell["thinking"])
        cell["guided_overhead_tpot_ms"] = (
            None if not cell["guided_json"] or free is None or cell["tpot_ms"] is None
            else cell["tpot_ms"] - free)
        cell["guided_overhead_note"] = ""
        answered = cell["n"] - cell["failed"]
        if cell["guided_json"] and cell["thinking"] and answered and cell["cut_off"] == answered:
            # the grammar applies only once reasoning ends: it never did in this cell
            cell["guided_overhead_tpot_ms"] = None
            cell["guided_overhead_note"] = ("not applicable (grammar never applied: thinking "
                                            "cut off)")
    return out

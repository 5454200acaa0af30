"""PURE: rows for every table the tool shows (CLI text, UI dataframes, HTML reports).

Inputs are live Recordings (one comparison) or a run's summary document (lab/summary); the
numbers in them were computed elsewhere -- this module only lays them out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from playground.core.estimates import Summary
from playground.core.results import GridCell, Objectives, RunSummary
from playground.core.runner import Recording
from playground.outputs.fmt import TTFT_DEFINITIONS, ms, ms_num, pct, preview

COLUMNS = ["variant", "stream", "TTFT", "TTFA", "E2E", "first char", "tokens", "tok/s",
           "finish", "output"]
SUMMARY_HEADERS = ["variant", "n", "failed", "TTFT p50 [95% CI] / p95",
                   "first char p50 [CI] / p95", "E2E p50 [CI] / p95",
                   "server queue / prefill / decode / rest p50", "JSON valid",
                   "schema valid", "fields exact"]
GRID_HEADERS = ["thinking", "guided JSON", "n", "failed", "JSON valid", "schema valid",
                "TTFA p50", "E2E p50", "TPOT p50", "guided overhead (TPOT)",
                "thinking cut off"]
WHY_HEADERS = ["variant", *(f"{label} p50" for label in TTFT_DEFINITIONS.values()),
               "goodput (meets all SLOs)", "TPOT p50", "x above physical floor"]


def row(rec: Recording) -> dict[str, str]:
    """One variant of a live comparison (the CLI's table)."""
    m = rec.metrics()
    if rec.error is not None:
        kept = rec.content or rec.reasoning
        out = (f"PARTIAL ({len(kept):,} chars kept: {preview(kept, 24)}) " if kept else "") + \
            f"ERROR: {rec.error}"
    else:
        out = preview(rec.content) or ("(reasoning only) " + preview(rec.reasoning, 24)
                                       if rec.reasoning else "(empty)")
    streaming = rec.request.stream
    return {
        "variant": rec.variant.name,
        "stream": "yes" if streaming else "no",
        "TTFT": ms(m.ttft_ms, "n/a (non-streaming)" if not streaming else "none"),
        "TTFA": ms(m.ttfa_ms, "n/a" if not streaming else "no answer"),
        "E2E": ms(m.e2e_ms, "-"),
        "first char": ms(m.visible_wait_ms, "-"),
        "tokens": "-" if m.completion_tokens is None else str(m.completion_tokens),
        "tok/s": "-" if m.decode_tok_s is None else f"{m.decode_tok_s:.0f}",
        "finish": rec.raw.finish_reason or rec.status,
        "output": out,
    }


def text_table(rows: Sequence[dict[str, str]], columns: Sequence[str] = COLUMNS) -> str:
    """A fixed-width table; the header alone when there are no rows."""
    widths = {c: max([len(c), *(len(r.get(c, "")) for r in rows)]) for c in columns}
    line = "  ".join(c.ljust(widths[c]) for c in columns)
    rule = "  ".join("-" * widths[c] for c in columns)
    body = ["  ".join(r.get(c, "").ljust(widths[c]) for c in columns) for r in rows]
    return "\n".join([line, rule, *body])


def as_dicts(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, str]]:
    return [dict(zip(headers, map(str, r), strict=True)) for r in rows]


def _cell(s: Summary | None) -> str:
    if s is None or not s.n or s.p50 is None or s.p95 is None:
        return "n/a"
    ci = s.median_ci
    ci_txt = f" [{ci[0]:.0f}-{ci[1]:.0f}]" if ci else ""
    return f"{s.p50:.0f}{ci_txt} / {s.p95:.0f}"


def summary_rows(summary: RunSummary) -> list[list[Any]]:
    rows = []
    for n, v in summary.variants.items():
        srv = v.server
        server = ("-" if srv.rest_ms is None else " / ".join(
            f"{x or 0:.0f}" for x in (srv.queue_ms, srv.prefill_ms, srv.decode_ms,
                                       srv.rest_ms)))
        m = v.metrics
        rows.append([n, v.n, v.failed, _cell(m.get("ttft_ms")), _cell(m.get("visible_wait_ms")),
                     _cell(m.get("e2e_ms")), server, pct(v.json_valid_pct),
                     pct(v.schema_valid_pct), pct(v.field_exact_pct)])
    return rows


def why_rows(summary: RunSummary) -> list[list[str]]:
    """Per variant: the three TTFT definitions, goodput, TPOT and its distance to the floor
    (joined by variant: mid-run, a variant may have no finished request yet)."""
    floor = summary.floor_ms
    out = []
    for n, v in summary.variants.items():
        defs = summary.definitions.get(n, {})
        good = summary.goodput_pct.get(n)
        tpot = v.metrics.get("tpot_ms")
        p50 = tpot.p50 if tpot is not None and tpot.n else None
        out.append([n, *(ms_num(defs.get(k)) for k in TTFT_DEFINITIONS), pct(good),
                    "n/a" if p50 is None else ms_num(p50),
                    f"{p50 / floor:.1f}x" if floor and p50 is not None else "n/a"])
    return out


def _per_token(ms_value: float | None) -> str:
    return "-" if ms_value is None else f"{ms_value:+.2f} ms/token"


def grid_rows(cells: Sequence[GridCell]) -> list[list[str]]:
    return [["on" if c.thinking else "off", "on" if c.guided_json else "off",
             str(c.n), str(c.failed), pct(c.json_valid_pct),
             pct(c.schema_valid_pct), ms(c.ttfa_ms), ms(c.e2e_ms), ms(c.tpot_ms),
             c.guided_overhead_note or _per_token(c.guided_overhead_tpot_ms),
             f"{c.cut_off}/{c.n - c.failed}" if c.thinking else "-"]
            for c in cells]


def objectives(slo: Objectives) -> str:
    return ", ".join(f"{k} <= {v:,.0f} ms" for k, v in (("TTFT", slo.ttft_ms),
                                                        ("E2E", slo.e2e_ms))
                     if v is not None) or "none set"

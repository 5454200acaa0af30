"""PURE: recordings -> rows and plain-text tables (no I/O, no gradio)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from playground.core.runner import Recording

COLUMNS = ["variant", "stream", "TTFT", "TTFA", "E2E", "first char", "tokens", "tok/s",
           "finish", "output"]


def fmt_ms(value: float | None, missing: str = "n/a") -> str:
    return missing if value is None else f"{value:,.0f} ms" if value >= 100 else f"{value:.1f} ms"


def preview(text: str, width: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def row(rec: Recording) -> dict[str, str]:
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
        "TTFT": fmt_ms(m.ttft_ms, "n/a (non-streaming)" if not streaming else "none"),
        "TTFA": fmt_ms(m.ttfa_ms, "n/a" if not streaming else "no answer"),
        "E2E": fmt_ms(m.e2e_ms, "-"),
        "first char": fmt_ms(m.visible_wait_ms, "-"),
        "tokens": "-" if m.completion_tokens is None else str(m.completion_tokens),
        "tok/s": "-" if m.decode_tok_s is None else f"{m.decode_tok_s:.0f}",
        "finish": rec.raw.finish_reason or rec.status,
        "output": out,
    }


def text_table(rows: Sequence[dict[str, str]], columns: Sequence[str] = COLUMNS) -> str:
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in columns}
    line = "  ".join(c.ljust(widths[c]) for c in columns)
    rule = "  ".join("-" * widths[c] for c in columns)
    body = ["  ".join(r[c].ljust(widths[c]) for c in columns) for r in rows]
    return "\n".join([line, rule, *body])


def recording_dict(rec: Recording) -> dict[str, Any]:
    """Everything measured for one request, JSON-ready (the body never holds the API key)."""
    from dataclasses import asdict

    return {
        "variant": rec.variant.model_dump(mode="json", by_alias=True),
        "base_url": rec.base_url,
        "status": rec.status,
        "request": rec.request.body(),
        "raw": asdict(rec.raw),
        "metrics": asdict(rec.metrics()),
        "content": rec.content,
        "reasoning": rec.reasoning,
        "error": None if rec.error is None else {"type": type(rec.error).__name__,
                                                 "message": str(rec.error)},
        "clock_origin": list(rec.clock_origin),
    }

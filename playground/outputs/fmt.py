"""The one formatting module: milliseconds, percent, verdict sentences, metric labels and the
demo-model notice, in one wording everywhere (UI, CLI, reports)."""

from __future__ import annotations

import html
import re

from playground.core.results import RunSummary
from playground.server.demo_model import is_demo_dir
from playground.server.http import ServerInfo

DEMO_NOTICE = ("Served by the OFFLINE DEMO MODEL: Qwen3 architecture and real Qwen vocabulary with "
               "RANDOM weights. Its text (and so any accuracy number) is meaningless; its latency "
               "mechanics (prefill, decode, streaming, thinking, guided JSON) are real.")

METRIC_LABELS = {
    "ttft_ms": "TTFT",
    "ttfa_ms": "TTFA",
    "visible_wait_ms": "first visible character",
    "e2e_ms": "E2E",
    "tpot_ms": "TPOT",
    "first_chunk_ms": "first SSE chunk (vllm bench serve's TTFT)",
    "pre_send_ms": "client library's time before sending",
}

VERDICT_COLORS = {"confirmed": "#2e7d32", "refuted": "#c62828",
                  "no detectable difference": "#6d6d6d", "not measurable": "#9e9e9e",
                  "too few samples": "#9e9e9e", "not measurable on the demo model": "#9e9e9e",
                  "reported": "#1565c0", "not run": "#9e9e9e"}
PARTLY_COLOR = "#ef6c00"  # "partly: ..." -- a compound claim of which only some parts hold


def verdict_color(verdict: str, default: str = "#888") -> str:
    """The colour of a verdict, also when a note follows it ("confirmed -- the budget ...")."""
    if verdict.startswith("partly"):
        return PARTLY_COLOR
    for key in sorted(VERDICT_COLORS, key=len, reverse=True):
        if verdict.startswith(key):
            return VERDICT_COLORS[key]
    return default


_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#])")  # links/images need [ ]; < > & are HTML-escaped


def md_text(text: object, limit: int | None = None) -> str:
    """Untrusted text (model output, server messages, names and values from a recording or a
    preset file) for a Markdown component or report: it reads as the same text and never acts
    as markup -- no HTML (escaped), no link or image (no [ ]), no emphasis, code or table cell
    (those characters backslash-escaped). `limit` cuts it first (with an ellipsis)."""
    s = str(text)
    if limit is not None and len(s) > limit:
        s = s[:limit] + "…"
    return _MD_SPECIAL.sub(r"\\\1", html.escape(s, quote=False))


def ms(value: float | None, missing: str = "n/a") -> str:
    """1.2 ms / 34.5 ms / 1,234 ms: three significant digits where they mean something."""
    if value is None:
        return missing
    return f"{value:,.0f} ms" if abs(value) >= 100 else f"{value:.1f} ms"


def ms_num(value: float | None, missing: str = "n/a") -> str:
    """The number alone (tables with the unit in the header)."""
    return missing if value is None else f"{value:,.0f}"


def pct(value: float | None, missing: str = "-") -> str:
    return missing if value is None else f"{value:.0f}%"


def preview(text: str, width: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"

# How tools define the first token, on the same requests (lab/insight.definitions).
TTFT_DEFINITIONS = {"first_chunk_ms": "first SSE chunk (vllm bench serve)",
                    "ttft_ms": "first token (GuideLLM, this tool's TTFT)",
                    "ttfa_ms": "first answer token (TTFA)"}


def demo_notice(info: ServerInfo) -> str:
    """DEMO_NOTICE when the server serves a locally built demo model, else ""."""
    return DEMO_NOTICE if any(is_demo_dir(m.root) for m in info.models) else ""


def at_once_text(summary: RunSummary) -> list[str]:
    """One warning per variant whose streamed replies arrived at once (lab/summary.at_once)."""
    out = []
    for name, v in summary.variants.items():
        k = v.at_once
        if k:
            out.append(f"{name}: {k} of {v.n} streamed replies arrived at once (the first "
                       "token with the last: the server did not stream them -- a CPU too busy "
                       "to, see docs/load.md); their TTFT is their E2E")
    return out

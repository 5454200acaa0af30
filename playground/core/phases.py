"""Where one response's time went: queue, prefill, thinking, answer, transport + client.

PURE. From the client's timestamps and the server's per-request metrics
(`--enable-per-request-metrics`: queue_time_ms, time_to_first_token_ms measured from
scheduling, generation_time_ms from the first to the last token):

    queue      = server queue time
    prefill    = server time to first token (scheduling -> first token: prefill + 1 step)
    thinking   = the share of the server's decode time spent before the first answer token
    answer     = the rest of the decode time
    transport  = E2E (client) - the server's parts: HTTP, templating/tokenizing, detokenizing,
                 SSE framing and our own parsing. It is the residual, so the parts add up to
                 E2E exactly; a negative residual means the server's clock and ours disagree
                 and is reported, never hidden.

The thinking/answer split uses the client's stamps when streaming (time from the first
reasoning token to the first content token) and the reasoning-token share of `usage` when not.
Without server metrics only the client's view is available: wait for the first token,
thinking, answer (transport cannot be separated from queue and prefill then).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

PHASE_COLORS = {"queue": "#9e9e9e", "prefill": "#f58518", "thinking": "#b279a2",
                "answer": "#4c78a8", "transport + client": "#54a24b",
                "wait for first token": "#f58518"}


@dataclass(frozen=True)
class Breakdown:
    parts: list[tuple[str, float]]  # (phase, ms), in time order
    e2e_ms: float
    residual_ms: float  # transport + client (server-sourced), or 0 for the client-only view
    source: str  # "server per-request metrics" | "client timestamps only"

    def total(self) -> float:
        return sum(ms for _, ms in self.parts)


def _split(decode_ms: float, thinking_frac: float) -> list[tuple[str, float]]:
    frac = min(1.0, max(0.0, thinking_frac))
    return [("thinking", decode_ms * frac), ("answer", decode_ms * (1 - frac))]


def thinking_fraction(raw: dict[str, Any]) -> float:
    """Share of decode time before the first answer token (0 with thinking off)."""
    first_r, first_c = raw.get("t_first_reasoning"), raw.get("t_first_content")
    usage = raw.get("usage") or {}
    if raw.get("streaming"):
        starts = [t for t in (first_r, first_c) if t is not None]
        last = raw.get("t_last")
        if first_r is None or not starts or last is None:
            return 0.0
        if first_c is None:
            return 1.0  # thinking never ended
        span = last - min(starts)
        return 1.0 if span <= 0 else (first_c - first_r) / span
    reasoning, completion = usage.get("reasoning_tokens"), usage.get("completion_tokens")
    if reasoning and completion:
        return reasoning / completion
    return 0.0


def breakdown(raw: dict[str, Any], e2e_ms: float | None, ttft_ms: float | None = None
              ) -> Breakdown | None:
    """`raw` is RawTimings as a dict (asdict / a run record's "raw")."""
    if e2e_ms is None:
        return None
    sm = raw.get("server_metrics") or {}
    frac = thinking_fraction(raw)
    if all(k in sm for k in ("queue_time_ms", "time_to_first_token_ms", "generation_time_ms")):
        queue, prefill, decode = (float(sm["queue_time_ms"]), float(sm["time_to_first_token_ms"]),
                                  float(sm["generation_time_ms"]))
        parts = [("queue", queue), ("prefill", prefill), *_split(decode, frac)]
        residual = e2e_ms - queue - prefill - decode
        parts.append(("transport + client", residual))
        return Breakdown(parts, e2e_ms, residual, "server per-request metrics")
    if ttft_ms is None:
        return Breakdown([*_split(e2e_ms, frac)], e2e_ms, 0.0, "client timestamps only")
    return Breakdown([("wait for first token", ttft_ms), *_split(e2e_ms - ttft_ms, frac)],
                     e2e_ms, 0.0, "client timestamps only")


def html_bar(b: Breakdown | None, width_px: int = 260) -> str:
    """A stacked bar (inline HTML, no JS) with a one-line legend."""
    if b is None:
        return ""
    total = sum(max(0.0, ms) for _, ms in b.parts) or 1.0
    spans = "".join(
        f"<span title='{name}: {ms:,.0f} ms' style='display:inline-block;height:12px;"
        f"width:{max(0.0, ms) / total * width_px:.1f}px;background:{PHASE_COLORS[name]}'>"
        "</span>" for name, ms in b.parts)
    legend = " · ".join(
        f"<span style='color:{PHASE_COLORS[name]}'>■</span> {name} {ms:,.0f}"
        for name, ms in b.parts if abs(ms) >= 0.5 or name == "transport + client")
    note = ("transport + client = E2E minus the server's parts" if b.residual_ms >= 0
            else "negative residual: server and client clocks disagree")
    if b.source.startswith("client"):
        note = "client timestamps only (no per-request server metrics)"
    return (f"<div class='phase-bar'><div style='white-space:nowrap'>{spans}</div>"
            f"<div style='font-size:0.8em'>{legend} ms · E2E {b.e2e_ms:,.0f} ms "
            f"<i>({note})</i></div></div>")

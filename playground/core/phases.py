"""Where one response's time went: queue, prefill, thinking, answer, transport + client.

PURE. From the client's timestamps and the server's per-request metrics (`server_parts` and
`residual_ms` in core/metrics, the only definitions of the server's share):

    queue      = server queue time
    prefill    = server time to first token (scheduling -> first token: prefill + 1 step)
    thinking   = the share of the server's decode time spent before the first answer token
    answer     = the rest of the decode time
    transport  = E2E (client) - the server's parts: the residual, so the parts add up to E2E
                 exactly; a negative residual means the server's clock and ours disagree and
                 is reported, never hidden.

The thinking/answer split uses the client's stamps when streaming (time from the first
reasoning token to the first content token) and the reasoning-token share of `usage` when not.
Without server metrics only the client's view is available: wait for the first token,
thinking, answer (transport cannot be separated from queue and prefill then).
"""

from __future__ import annotations

from dataclasses import dataclass

from playground.core.metrics import RawTimings, derive, residual_ms, server_parts

PHASES = ("queue", "prefill", "wait for first token", "thinking", "answer",
          "transport + client")


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


def thinking_fraction(raw: RawTimings) -> float:
    """Share of decode time before the first answer token (0 with thinking off)."""
    first_r, first_c = raw.t_first_reasoning, raw.t_first_content
    if raw.streaming:
        starts = [t for t in (first_r, first_c) if t is not None]
        if first_r is None or not starts or raw.t_last is None:
            return 0.0
        if first_c is None:
            return 1.0  # thinking never ended
        span = raw.t_last - min(starts)
        return 1.0 if span <= 0 else (first_c - first_r) / span
    reasoning, completion = raw.usage.reasoning_tokens, raw.usage.completion_tokens
    if reasoning and completion:
        return reasoning / completion
    return 0.0


def breakdown(raw: RawTimings) -> Breakdown | None:
    """The phases of one finished reply (None before it has an E2E)."""
    m = derive(raw)
    if m.e2e_ms is None:
        return None
    frac = thinking_fraction(raw)
    parts = server_parts(raw)
    residual = residual_ms(raw, m.e2e_ms)
    if parts is not None and residual is not None:
        phases = [("queue", parts.queue_ms), ("prefill", parts.prefill_ms),
                  *_split(parts.decode_ms, frac), ("transport + client", residual)]
        return Breakdown(phases, m.e2e_ms, residual, "server per-request metrics")
    if m.ttft_ms is None:
        return Breakdown([*_split(m.e2e_ms, frac)], m.e2e_ms, 0.0, "client timestamps only")
    return Breakdown([("wait for first token", m.ttft_ms), *_split(m.e2e_ms - m.ttft_ms, frac)],
                     m.e2e_ms, 0.0, "client timestamps only")

"""Raw timestamps in, derived metrics out: the one place every per-request number is computed
(definitions: docs/measurement.md).

A metric that was not observed is None, never a fake 0. Token counts come from the server's
`usage`, never from counting chunks. All times are seconds from one monotonic clock; derived
values are milliseconds (`_ms`) or tokens per second (`_tok_s`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field


@dataclass
class Usage:
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None


@dataclass
class RawTimings:
    """What the client observed for one request. `t_*` are clock readings in seconds."""

    streaming: bool
    # when an open-loop run scheduled this request (lab/arrivals): t_send - t_due is the
    # client's own delay in sending it; None in closed-loop runs
    t_due: float | None = None
    t_send: float | None = None
    # when our code called the client library (SDK / LangChain): t_send - t_call is the
    # library's own time before the request reached the transport
    t_call: float | None = None
    t_headers: float | None = None
    t_first_chunk: float | None = None
    t_first_reasoning: float | None = None
    t_first_content: float | None = None
    t_last: float | None = None  # last token chunk (streaming) or response received
    token_times: list[float] = field(default_factory=list)  # arrival of every token chunk
    # (reasoning, content) text of each token chunk, aligned with token_times (for replay)
    token_text: list[tuple[str, str]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    http_status: int | None = None
    server_metrics: dict[str, float] | None = None  # --enable-per-request-metrics

    @property
    def t_first_token(self) -> float | None:
        seen = [t for t in (self.t_first_reasoning, self.t_first_content) if t is not None]
        return min(seen) if seen else None


@dataclass(frozen=True)
class Metrics:
    ttft_ms: float | None  # first reasoning-or-content token; None when not streaming
    ttfa_ms: float | None  # first answer (content) token
    e2e_ms: float | None
    first_chunk_ms: float | None  # first SSE chunk of any kind (vllm bench's reading)
    tpot_ms: float | None
    decode_tok_s: float | None
    itl_ms: list[float]
    completion_tokens: int | None
    prompt_tokens: int | None
    reasoning_tokens: int | None
    # the client library's own time before the request reached the transport (t_send - t_call)
    pre_send_ms: float | None = None
    # whether the reply had answer text (None: not known -- the caller did not say)
    answered: bool | None = None
    # open-loop runs only (t_due): the client's delay in sending (t_send - t_due), and TTFT and
    # E2E counted from the schedule instead of from the send (coordinated omission shown)
    send_delay_ms: float | None = None
    ttft_from_due_ms: float | None = None
    e2e_from_due_ms: float | None = None

    @property
    def visible_wait_ms(self) -> float | None:
        """When the audience sees the first character of the ANSWER: TTFA streaming, E2E
        otherwise; None when the reply has no answer text (reasoning sits in a collapsed
        panel: it is not what the audience sees). See `first_visible_ms`."""
        if self.ttft_ms is not None or self.ttfa_ms is not None:  # streamed
            return self.ttfa_ms
        return None if self.answered is False else self.e2e_ms

    def first_visible_ms(self, show_reasoning: bool = False) -> float | None:
        """The first character on screen: the answer's by default; with the reasoning shown
        (the page's "show reasoning"), reasoning or answer, whichever came first (TTFT)."""
        if not show_reasoning:
            return self.visible_wait_ms
        return self.ttft_ms if self.ttft_ms is not None else self.e2e_ms


def _ms(start: float | None, end: float | None) -> float | None:
    if start is None or end is None:
        return None
    return (end - start) * 1000.0


def derive(raw: RawTimings, answered: bool | None = None) -> Metrics:
    """`answered`: whether the reply had answer text (the caller holds the text; a streamed
    reply says so by its first content token already)."""
    ttft = _ms(raw.t_send, raw.t_first_token) if raw.streaming else None
    e2e = _ms(raw.t_send, raw.t_last)
    n = raw.usage.completion_tokens
    tpot = tok_s = None
    if ttft is not None and e2e is not None and n is not None and n > 1 and e2e >= ttft:
        # every token in one chunk (a busy server merges them): TPOT 0, as vllm bench
        # reports it; a rate is not defined then
        tpot = (e2e - ttft) / (n - 1)
        tok_s = (n - 1) / ((e2e - ttft) / 1000.0) if e2e > ttft else None
    times = raw.token_times
    itl = [(b - a) * 1000.0 for a, b in itertools.pairwise(times)]
    return Metrics(
        ttft_ms=ttft,
        ttfa_ms=_ms(raw.t_send, raw.t_first_content) if raw.streaming else None,
        e2e_ms=e2e,
        first_chunk_ms=_ms(raw.t_send, raw.t_first_chunk) if raw.streaming else None,
        tpot_ms=tpot,
        decode_tok_s=tok_s,
        itl_ms=itl,
        completion_tokens=n,
        prompt_tokens=raw.usage.prompt_tokens,
        reasoning_tokens=raw.usage.reasoning_tokens,
        pre_send_ms=_ms(raw.t_call, raw.t_send),
        answered=(raw.t_first_content is not None) if raw.streaming else answered,
        send_delay_ms=_ms(raw.t_due, raw.t_send),
        ttft_from_due_ms=_ms(raw.t_due, raw.t_first_token) if raw.streaming else None,
        e2e_from_due_ms=_ms(raw.t_due, raw.t_last),
    )


# ---------------------------------------------------------------------------------------------
# the server's parts of one reply (vLLM --enable-per-request-metrics)


@dataclass(frozen=True)
class ServerParts:
    """vLLM's own per-request timings (build_per_request_timing_metrics, checked in the 0.26
    and 0.32 sources): queue = queued -> scheduled; prefill = scheduled -> first token (the
    server's TTFT, prefill plus one step); decode = first -> last output token
    (`generation_time_ms`, which excludes queue and prefill)."""

    queue_ms: float
    prefill_ms: float
    decode_ms: float

    @property
    def total_ms(self) -> float:
        return self.queue_ms + self.prefill_ms + self.decode_ms


SERVER_KEYS = ("queue_time_ms", "time_to_first_token_ms", "generation_time_ms")


def server_parts(raw: RawTimings) -> ServerParts | None:
    """The server's parts, or None when the server sent no per-request metrics."""
    sm = raw.server_metrics or {}
    if not all(isinstance(sm.get(k), int | float) for k in SERVER_KEYS):
        return None
    return ServerParts(float(sm["queue_time_ms"]), float(sm["time_to_first_token_ms"]),
                       float(sm["generation_time_ms"]))


def residual_ms(raw: RawTimings, e2e_ms: float | None) -> float | None:
    """What the server's clock does not see: E2E (client) - queue - prefill - decode = HTTP,
    the API server's templating and tokenising, detokenising, SSE framing, transport and our
    own parsing. Negative means the two clocks disagree; it is reported, never hidden."""
    parts = server_parts(raw)
    if parts is None or e2e_ms is None:
        return None
    return e2e_ms - parts.total_ms

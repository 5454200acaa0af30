"""Typed records built from raw timestamps, for unit tests of the views (no server)."""

from __future__ import annotations

from typing import Any

from playground.core.metrics import RawTimings, Usage
from playground.core.record import ErrorInfo, RequestRecord, ScoreInfo
from playground.specs.presets import Variant


def make_record(name: str, e2e_ms: float, ttft_ms: float | None = None, *,
                error: str | None = None, phase: str = "timed", trial: int = 0,
                server: dict[str, float] | None = None, tokens: int = 8,
                score: ScoreInfo | None = None, **variant: Any) -> RequestRecord:
    """One request of variant `name`: streaming when `ttft_ms` is given (tokens evenly spread
    from TTFT to E2E), non-streaming otherwise."""
    streaming = ttft_ms is not None
    raw = RawTimings(streaming=streaming, t_send=0.0, t_last=e2e_ms / 1000,
                     usage=Usage(prompt_tokens=5, completion_tokens=tokens),
                     finish_reason="length", server_metrics=server)
    if ttft_ms is not None:
        step = (e2e_ms - ttft_ms) / max(1, tokens - 1) / 1000
        raw.token_times = [ttft_ms / 1000 + i * step for i in range(tokens)]
        raw.token_text = [("", "x")] * tokens
        raw.t_first_chunk = raw.t_first_content = ttft_ms / 1000
    v = Variant(name=name, stream=streaming, **variant)
    return RequestRecord(variant=v, base_url="http://x/v1", status="error" if error else "done",
                         request={"model": "m", "messages": [{"role": "user", "content": "p"}],
                                  "stream": streaming},
                         raw=raw, content="" if error else "x" * tokens,
                         error=ErrorInfo(type="StreamError", message=error) if error else None,
                         trial=trial, phase=phase, example=0, repetition=0,  # type: ignore[arg-type]
                         score=score)

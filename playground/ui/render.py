"""PURE: a live Recording -> the strings one column shows (metrics line, badge, error)."""

from __future__ import annotations

import time

from playground.core.metrics import Metrics
from playground.core.runner import Recording
from playground.core.scoring import badge, score
from playground.outputs.tables import fmt_ms


def phases_html(rec: Recording) -> str:
    """The phase bar (queue, prefill, thinking, answer, transport) of a finished response."""
    from dataclasses import asdict

    from playground.core.phases import breakdown, html_bar

    m = rec.metrics()
    if rec.error is not None:
        return ""
    return html_bar(breakdown(asdict(rec.raw), m.e2e_ms, m.ttft_ms))


def floor_text(tpot_ms: float | None, floor_ms: float | None) -> str:
    if tpot_ms is None:
        return ""
    text = f"**TPOT** {tpot_ms:.1f} ms"
    if floor_ms:
        text += f" ({tpot_ms / floor_ms:.1f}x the physical floor of {floor_ms:.2f} ms)"
    return text


def metrics_md(rec: Recording, now: float | None = None, floor_ms: float | None = None) -> str:
    m: Metrics = rec.metrics()
    if rec.status in ("pending",):
        return "_waiting…_"
    if rec.status == "running":
        t0 = rec.raw.t_send
        elapsed = "" if t0 is None else f" · {((now or time.perf_counter()) - t0):.1f} s"
        chunks = len(rec.raw.token_times)
        what = f"{chunks} chunks" if rec.raw.streaming else "non-streaming: nothing visible yet"
        return f"_running… {what}{elapsed}_"
    parts = []
    if rec.raw.streaming:
        parts.append(f"**TTFT** {fmt_ms(m.ttft_ms, 'none')}")
        parts.append(f"**TTFA** {fmt_ms(m.ttfa_ms, 'no answer')}")
    else:
        parts.append("**TTFT** n/a (non-streaming)")
    parts.append(f"**E2E** {fmt_ms(m.e2e_ms, '-')}")
    parts.append(f"**tokens** {m.completion_tokens if m.completion_tokens is not None else '-'}")
    if m.decode_tok_s is not None:
        parts.append(f"**decode** {m.decode_tok_s:.0f} tok/s")
    if m.tpot_ms is not None:
        parts.append(floor_text(m.tpot_ms, floor_ms))
    line = " · ".join(parts)
    if not rec.raw.streaming and m.e2e_ms is not None:
        line += (f"\n\n⏳ The user stares at an empty screen for the whole "
                 f"**{fmt_ms(m.e2e_ms)}** before the first character appears.")
    elif m.ttft_ms is not None:
        line += f"\n\nFirst character visible after **{fmt_ms(m.ttft_ms)}**."
    if rec.status == "cancelled":
        line = "**stopped** (partial output kept) · " + line
    if rec.raw.finish_reason:
        line += f" · finish: `{rec.raw.finish_reason}`"
    server = server_share(rec)
    if server:
        line += "\n\n" + server
    return line


def server_share(rec: Recording) -> str:
    """The server's own numbers (--enable-per-request-metrics) next to the client's E2E."""
    sm = rec.raw.server_metrics or {}
    e2e = rec.metrics().e2e_ms
    queue, gen = sm.get("queue_time_ms"), sm.get("generation_time_ms")
    if e2e is None or queue is None or gen is None:
        return ""
    rest = e2e - queue - gen
    ttft = sm.get("time_to_first_token_ms")
    ttft_txt = f" (of which first token {fmt_ms(ttft)})" if ttft is not None else ""
    return (f"🖥️ server: queue {fmt_ms(queue)} · generation {fmt_ms(gen)}{ttft_txt} · "
            f"rest (HTTP, API server, transport, client) {fmt_ms(rest)}")


def badge_md(rec: Recording) -> str:
    if not rec.finished or rec.error is not None:
        return ""
    schema = rec.variant.guided_json.json_schema if rec.variant.guided_json else None
    if not rec.content:
        if rec.reasoning:
            return "JSON: no answer (all output was reasoning: thinking never ended)"
        return ""
    return badge(score(rec.content, schema))


def error_md(rec: Recording) -> str:
    if rec.error is None:
        return ""
    kept = " Partial output above was kept." if (rec.content or rec.reasoning) else ""
    return f"❌ **{type(rec.error).__name__}**: {rec.error}{kept}"

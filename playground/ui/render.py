"""PURE: live Recordings -> the strings the Playground shows (metrics line, badge, error, the
presenter's headline row)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from html import escape

from playground.core.metrics import Metrics, residual_ms, server_parts
from playground.core.phases import breakdown
from playground.core.runner import Recording
from playground.core.scoring import badge, score
from playground.outputs.fmt import md_text, ms
from playground.outputs.html import phase_bar


def phases_html(rec: Recording) -> str:
    """The phase bar (queue, prefill, thinking, answer, transport) of a finished response."""
    return "" if rec.error is not None else phase_bar(breakdown(rec.raw))


def floor_text(tpot_ms: float | None, floor_ms: float | None) -> str:
    if tpot_ms is None:
        return ""
    text = f"**TPOT** {tpot_ms:.1f} ms"
    if tpot_ms == 0:  # the server merged every token into one chunk
        return text + " (every token arrived in one chunk)"
    if floor_ms:
        text += f" ({tpot_ms / floor_ms:.1f}x the physical floor of {floor_ms:.2f} ms)"
    return text


def metrics_md(rec: Recording, now: float | None = None, floor_ms: float | None = None) -> str:
    m: Metrics = rec.metrics()
    if rec.status == "pending" and (rec.raw.t_send is None or rec.raw.streaming):
        return "_waiting…_"
    if rec.status in ("pending", "running"):  # pending + sent: a non-streaming request
        t0 = rec.raw.t_send
        elapsed = "" if t0 is None else f" · {((now or time.perf_counter()) - t0):.1f} s"
        chunks = len(rec.raw.token_times)
        what = f"{chunks} chunks" if rec.raw.streaming else "non-streaming: nothing visible yet"
        return f"_running… {what}{elapsed}_"
    parts = []
    if rec.raw.streaming:
        parts.append(f"**TTFT** {ms(m.ttft_ms, 'none')}")
        parts.append(f"**TTFA** {ms(m.ttfa_ms, 'no answer')}")
    else:
        parts.append("**TTFT** n/a (non-streaming)")
    parts.append(f"**E2E** {ms(m.e2e_ms, '-')}")
    parts.append(f"**tokens** {m.completion_tokens if m.completion_tokens is not None else '-'}")
    if m.decode_tok_s is not None:
        parts.append(f"**decode** {m.decode_tok_s:.0f} tok/s")
    if m.tpot_ms is not None:
        parts.append(floor_text(m.tpot_ms, floor_ms))
    line = " · ".join(parts)
    answer = m.visible_wait_ms
    if rec.status == "done" and answer is None and m.e2e_ms is not None:
        line += ("\n\n**No answer**: every token was reasoning (it sits in the collapsed "
                 "reasoning panel) -- the audience saw no answer text.")
    elif not rec.raw.streaming and answer is not None:
        line += (f"\n\n⏳ The user stares at an empty screen for the whole "
                 f"**{ms(answer)}** before the first character appears.")
    elif answer is not None:
        line += f"\n\nFirst answer character visible after **{ms(answer)}**."
    if rec.status == "cancelled":
        line = "**stopped** (partial output kept) · " + line
    if rec.raw.finish_reason:
        line += f" · finish: {md_text(rec.raw.finish_reason, 40)}"
    server = server_share(rec)
    if server:
        line += "\n\n" + server
    return line


def server_share(rec: Recording) -> str:
    """The server's own numbers (--enable-per-request-metrics) next to the client's E2E; the
    residual is core/metrics.residual_ms, the same number as the phase bar's last part."""
    parts = server_parts(rec.raw)
    rest = residual_ms(rec.raw, rec.metrics().e2e_ms)
    if parts is None or rest is None:
        return ""
    return (f"🖥️ server: queue {ms(parts.queue_ms)} · prefill {ms(parts.prefill_ms)} · "
            f"decode {ms(parts.decode_ms)} · rest (HTTP, API server, transport, client) "
            f"{ms(rest)}")


def badge_md(rec: Recording) -> str:
    if not rec.finished or rec.error is not None:
        return ""
    schema = rec.variant.guided_json.json_schema if rec.variant.guided_json else None
    if not rec.content:
        if rec.reasoning:
            return "JSON: no answer (all output was reasoning: thinking never ended)"
        return ""
    # the validator's message quotes the model's output: text, never Markdown or HTML
    return md_text(badge(score(rec.content, schema)))


def error_md(rec: Recording) -> str:
    if rec.error is None:
        return ""
    kept = " Partial output above was kept." if (rec.content or rec.reasoning) else ""
    return f"❌ **{type(rec.error).__name__}**: {md_text(rec.error, 2000)}{kept}"


# One request per column: a ratio with no interval, and the card says so (intervals come from
# repeated runs: the Benchmark tab).
ONE_RUN = " (one run each, no interval)"


def _speedup(base: float | None, this: float | None, base_col: int = 1) -> tuple[str, str]:
    """(the comparison with the baseline column, its class: the colour follows the sign)."""
    if base is None or this is None or this <= 0:
        return "", ""
    ratio = base / this
    if ratio >= 1.05:
        return f"{ratio:.1f}× faster than column {base_col}{ONE_RUN}", "hl-faster"
    if ratio <= 0.95:
        return f"{1 / ratio:.1f}× slower than column {base_col}{ONE_RUN}", "hl-slower"
    return f"same as column {base_col}{ONE_RUN}", "hl-same"


HEADLINE_LABEL = {False: "first answer character", True: "first character (reasoning shown)"}


def _card(i: int, name: str, big: str, label: str, small: str, cmp: str, cls: str) -> str:
    return (f'<div class="hl-card hl-{i}"><div class="hl-name">{i + 1}. {escape(name)}</div>'
            f'<div class="hl-big">{big}</div><div class="hl-label">{label}</div>'
            f'<div class="hl-small">{small}</div><div class="hl-cmp {cls}">{cmp}</div></div>')


def headline_html(recs: Sequence[Recording], now: float | None = None,
                  show_reasoning: bool = False, replay: str = "",
                  where: Sequence[int] | None = None, titles: Mapping[int, str] | None = None,
                  notes: Mapping[int, str] | None = None) -> str:
    """The presenter's row: one card per column, in large type, when the first character the
    audience sees appeared, the E2E and how it compares with the baseline (the first column
    that ran). By default that is the first ANSWER character (the reasoning
    panels are collapsed); with `show_reasoning` (the page opens them) reasoning counts too.
    A column that ended with no answer says so and is compared with nothing. `where`: each
    recording's column (a ladder's skipped step keeps its column: its card says `notes`' reason);
    `titles`: what each column ran, when not its variant's name (a ladder's step). A replay
    says so above the cards (`replay`: its label), so the presenter view never passes it off
    as live."""
    if not recs and not notes:
        return ""
    where = list(where) if where is not None else list(range(len(recs)))
    titles, notes = titles or {}, notes or {}
    label = HEADLINE_LABEL[show_reasoning]
    waits = {col: (r.metrics().first_visible_ms(show_reasoning) if r.error is None else None)
             for r, col in zip(recs, where, strict=False)}
    base_col = min(waits) if waits else None  # the first column that ran (not a skipped step)
    cards = []
    by_col = dict(zip(where, recs, strict=False))
    for i in range(max([*where, *notes, -1]) + 1):
        name = titles.get(i) or (by_col[i].variant.name if i in by_col else f"column {i + 1}")
        r = by_col.get(i)
        if r is None:
            reason = notes.get(i, "")
            cards.append(_card(i, name, "not run", label, escape(reason[:120]), "", ""))
            continue
        m = r.metrics()
        wait = waits[i]
        cmp, cls = "", ""
        if r.error is not None:
            big, small = "failed", escape(type(r.error).__name__)
        elif wait is None and r.status == "done":
            big = "no answer"
            small = (f"reasoning only · E2E {ms(m.e2e_ms)}" if m.e2e_ms is not None
                     else "reasoning only")
        elif wait is None:
            big = "…" if r.status in ("pending", "running") else "-"
            small = ("stopped" if r.status == "cancelled" else "waiting for the first "
                     "character")
        else:
            big = ms(wait)
            small = f"E2E {ms(m.e2e_ms)}" if r.finished and m.e2e_ms is not None else "E2E …"
            if r.status == "cancelled":
                small += " (stopped)"
            if i == base_col:
                cmp = "baseline"
            elif base_col is not None:  # (a baseline with no answer: compared with nothing)
                cmp, cls = _speedup(waits[base_col], wait, base_col + 1)
        cards.append(_card(i, name, big, label, small, cmp, cls))
    row = f'<div class="hl-row" id="headline-row">{"".join(cards)}</div>'
    return (f'<div class="hl-replay">▶ {escape(replay)}: recorded numbers, not this '
            f'server\'s</div>{row}' if replay else row)


def status_html(rec: Recording, now: float | None = None, started: float | None = None,
                replay: bool = False) -> str:
    """The one-line live status of a column while its run streams (the live feed's);
    `started`: when the run began (a request counts as sent once the server answers).
    A replay's line says so and never waits for a server."""
    return ("▶ replay · " if replay else "") + _status(rec, now, started, replay)


def _status(rec: Recording, now: float | None, started: float | None, replay: bool) -> str:
    now = time.perf_counter() if now is None else now
    t0 = rec.raw.t_send
    elapsed = "" if t0 is None else f" · {now - t0:.1f} s"
    if rec.status == "pending" and not (t0 is not None and not rec.raw.streaming):
        since = "" if started is None else (f" · {now - started:.1f} s since "
                                            + ("Replay" if replay else "Run"))
        wait = "the recording's request is not sent yet" if replay else "waiting for the server"
        return f"<em>{wait}…{since}</em>"
    if rec.status in ("pending", "running"):  # (a non-streaming request, sent, is pending
        if rec.raw.streaming:                 # until its one answer arrives)
            first = rec.raw.t_first_token
            ttft = "" if first is None or t0 is None else f" · TTFT {ms((first - t0) * 1000)}"
            return f"<em>running… {len(rec.raw.token_times)} chunks{ttft}{elapsed}</em>"
        return f"<em>non-streaming: nothing visible until the whole answer arrives{elapsed}</em>"
    m = rec.metrics()
    return f"<em>{escape(rec.status)} · E2E {ms(m.e2e_ms, '-')}</em>"

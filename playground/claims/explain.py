"""PURE: a worked model next to a claim's verdict, from the claim's own measurements.

"thinking-cost": what thinking costs per token and where it puts the first answer token, and
how many reasoning tokens the article's "2x" implies at the measured speed:
E2E ~ TTFT + (reasoning + answer tokens - 1) x TPOT.
"engine-queueing": an engine comparison at N concurrent, split into per-request service time
and time spent waiting behind the other requests.
"""

from __future__ import annotations

from collections.abc import Sequence

from playground.core.record import RequestRecord, values
from playground.lab.stats import median
from playground.outputs.fmt import ms


def _tokens(rows: Sequence[RequestRecord], attr: str) -> float | None:
    got = [getattr(r.metrics, attr) for r in rows if r.ok]
    return median([g for g in got if g is not None])


def thinking_cost(off: Sequence[RequestRecord], on: Sequence[RequestRecord],
                  budget: int | None) -> str:
    ttft, e2e_off = median(values(off, "ttft_ms")), median(values(off, "e2e_ms"))
    tpot_off, tpot_on = median(values(off, "tpot_ms")), median(values(on, "tpot_ms"))
    ttfa_on = median(values(on, "ttfa_ms"))
    answer, reasoning = _tokens(off, "completion_tokens"), _tokens(on, "reasoning_tokens")
    if None in (ttft, e2e_off, tpot_off, tpot_on, answer, ttfa_on) or (
            reasoning is None and budget is None):
        return ""
    assert ttft is not None and e2e_off is not None and tpot_off and tpot_on is not None
    assert answer is not None and ttfa_on is not None
    implied = (2 * e2e_off - ttft) / tpot_off - answer + 1
    counted = "" if reasoning is not None else (
        " (this server does not report reasoning tokens: the budget is used)")
    reasoning = reasoning if reasoning is not None else float(budget or 0)
    how = (f"the reasoning was forced to {reasoning:.0f} tokens by vLLM's per-request budget "
           f"(thinking_token_budget={budget}; the answer starts with '<think>' so that the "
           f"budget applies even to a model that never writes it){counted}" if budget else
           f"the model reasoned for {reasoning:.0f} tokens (median) on its own")
    return (f"How it was measured: {how}; the answer without thinking is {answer:.0f} tokens. "
            "Model: E2E ~ TTFT + (reasoning + answer tokens - 1) x TPOT. Measured: TTFT "
            f"{ms(ttft)}, TPOT {ms(tpot_off)} without thinking and {ms(tpot_on)} with it -- a "
            "reasoning token costs what an answer token costs -- and the first answer token "
            f"arrives at {ms(ttfa_on)} (TTFT + reasoning x TPOT predicts "
            f"{ms(ttft + reasoning * tpot_on)}). At this speed thinking doubles E2E "
            f"when it writes ~{implied:.0f} reasoning tokens per {answer:.0f}-token answer: the "
            "article's '2x' says how long the model thinks, not what a token costs.")


def budget_note(off: Sequence[RequestRecord], on: Sequence[RequestRecord],
                budget: int | None) -> str:
    """Next to the verdict of a claim whose reasoning length a budget fixed: the ratio is the
    arithmetic of that budget, and what the claim itself would need."""
    ttft, tpot_off = median(values(off, "ttft_ms")), median(values(off, "tpot_ms"))
    tpot_on, e2e_off = median(values(on, "tpot_ms")), median(values(off, "e2e_ms"))
    answer = _tokens(off, "completion_tokens")
    if not budget or None in (ttft, tpot_off, tpot_on, e2e_off, answer):
        return ""
    assert ttft is not None and tpot_off and tpot_on is not None and e2e_off is not None
    assert answer is not None
    predicted = (ttft + (budget + answer - 1) * tpot_on) / (ttft + (answer - 1) * tpot_off)
    implied = (2 * e2e_off - ttft) / tpot_off - answer + 1
    return (f"the budget fixed this ratio: {budget} reasoning + {answer:.0f} answer tokens at "
            f"one TPOT predict {predicted:.2f}x before anything is measured; the claim itself "
            f"needs the model to think ~{implied:.0f} tokens per {answer:.0f}-token answer on "
            "its own")


def service_and_queue(rows: Sequence[RequestRecord], one_at_a_time: bool
                      ) -> tuple[float | None, float | None, str]:
    """(median service ms, median queueing ms, how it was known) of one side's requests. The
    server's own queue time when it reports per-request metrics (vLLM); for a server that
    answers one request at a time (`transformers serve`), from the completions: a request's
    service starts when it was sent or when the one before it finished, whichever is later.
    (None, None, why) when neither applies."""
    ok = sorted((r for r in rows if r.ok and r.raw.t_send is not None
                 and r.raw.t_last is not None), key=lambda r: r.raw.t_last or 0.0)
    queued = [(r.raw.server_metrics or {}).get("queue_time_ms") for r in ok]
    e2e = [r.metrics.e2e_ms for r in ok]
    if ok and all(q is not None for q in queued) and all(e is not None for e in e2e):
        return (median([e - q for e, q in zip(e2e, queued, strict=True)]),  # type: ignore[operator]
                median([q for q in queued if q is not None]), "the server's own queue time")
    if not ok or not one_at_a_time:
        return None, None, "the server reports no queue time"
    service, wait, done = [], [], None
    for r in ok:
        sent, last = r.raw.t_send, r.raw.t_last
        assert sent is not None and last is not None
        start = sent if done is None else max(sent, done)
        service.append((last - start) * 1000.0)
        wait.append((start - sent) * 1000.0)
        done = last
    return median(service), median(wait), "one request at a time: from the completions"


def engine_split(base: Sequence[RequestRecord], var: Sequence[RequestRecord],
                 names: tuple[str, str], serial: set[str], claimed: str) -> str:
    """Next to an engine claim's verdict measured at N concurrent: per-request service time and
    time spent waiting behind the other requests, apart, and the article's number beside them
    -- an E2E ratio at concurrency mostly measures the queue of a server that serves one
    request at a time."""
    got = [service_and_queue(rows, name in serial)
           for rows, name in ((base, names[0]), (var, names[1]))]
    (svc_b, q_b, how_b), (svc_v, q_v, how_v) = got
    if None in (svc_b, svc_v, q_b, q_v):
        return ""
    assert svc_b is not None and svc_v is not None and q_b is not None and q_v is not None
    ratio = f" ({svc_b / svc_v:.1f}x)" if svc_v > 0 else ""
    return (f"served: {names[0]} {ms(svc_b)} vs {names[1]} {ms(svc_v)} per request{ratio}; "
            f"waiting behind the others: {ms(q_b)} vs {ms(q_v)} ({names[0]}: {how_b}; "
            f"{names[1]}: {how_v}); the article: {claimed}")


def _residual(rows: Sequence[RequestRecord]) -> tuple[float | None, float | None]:
    """(median server time, median transport + client time) from the server's per-request
    metrics; (None, None) when the server did not report them."""
    server, rest = [], []
    for r in rows:
        b = r.phases() if r.ok else None
        if b is not None and b.source == "server per-request metrics":
            server.append(b.e2e_ms - b.residual_ms)
            rest.append(b.residual_ms)
    return median(server), median(rest)


def client_overhead(base: Sequence[RequestRecord], other: Sequence[RequestRecord],
                    base_name: str, other_name: str) -> str:
    """How much of the difference between two clients sending the same request is the client:
    medians of TTFT, E2E, the library's time before sending, and -- when the server reports
    per-request metrics -- the server's own time, which a client cannot change."""
    ttft_b, ttft_o = median(values(base, "ttft_ms")), median(values(other, "ttft_ms"))
    e2e_b, e2e_o = median(values(base, "e2e_ms")), median(values(other, "e2e_ms"))
    pre_b, pre_o = median(values(base, "pre_send_ms")), median(values(other, "pre_send_ms"))
    if None in (e2e_b, e2e_o):
        return ""
    assert e2e_b is not None and e2e_o is not None
    parts = [f"Client overhead, same request to the same server: {other_name} vs {base_name}, "
             f"p50 E2E {ms(e2e_o)} vs {ms(e2e_b)} ({e2e_o - e2e_b:+.1f} ms)"]
    if ttft_b is not None and ttft_o is not None:
        parts.append(f"TTFT {ms(ttft_o)} vs {ms(ttft_b)} ({ttft_o - ttft_b:+.1f} ms)")
    if pre_b is not None and pre_o is not None:
        parts.append(f"time in the library before the request left {ms(pre_o)} vs "
                     f"{ms(pre_b)} ({pre_o - pre_b:+.1f} ms, not part of TTFT/E2E, which start "
                     "when the request reaches the transport)")
    text = "; ".join(parts) + "."
    (srv_b, rest_b), (srv_o, rest_o) = _residual(base), _residual(other)
    if None not in (srv_b, srv_o, rest_b, rest_o):
        assert srv_b is not None and srv_o is not None
        assert rest_b is not None and rest_o is not None
        text += (f" The server's own time (queue + prefill + decode, its per-request metrics) "
                 f"was {ms(srv_o)} vs {ms(srv_b)} ({srv_o - srv_b:+.1f} ms); transport + "
                 f"client {ms(rest_o)} vs {ms(rest_b)}: the client's share of the difference "
                 f"is {rest_o - rest_b:+.1f} ms per request, plus "
                 f"{(pre_o or 0) - (pre_b or 0):+.1f} ms before sending.")
    elif srv_b is not None or srv_o is not None:
        blind = other_name if srv_o is None else base_name
        text += (f" {blind} does not pass on the server's per-request metrics (LangChain drops "
                 "fields it does not know), so the server's share is not separated; both sent "
                 "the same request to the same server.")
    else:
        text += " The server reported no per-request metrics, so its share is not separated."
    return text

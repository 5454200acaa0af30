"""A concurrency sweep: one fixed-length workload at several concurrencies, each level measured by
the load path while it holds on this machine and by vllm bench serve past that (docs/load.md).

Both engines get the same prompts (unique per request: no prefix-cache hits), the same output
length (ignore_eos), thinking off, temperature 0. Their per-request results become the same rows
(ms: TTFT, TPOT = (E2E - TTFT) / (tokens - 1), E2E, every ITL) and every percentile comes from
lab/stats, whichever engine measured the level. A request whose tokens all arrived in one chunk
has TPOT 0 (vllm bench's definition) and is counted in `one_chunk`.
"""

from __future__ import annotations

import asyncio
import csv
import gzip
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from playground.core import request
from playground.core.runner import Recording, new_recording, run_at
from playground.core.sweep_doc import SweepLevel
from playground.lab.arrivals import Rate, schedule
from playground.lab.engine import (
    BenchServe,
    aligned,
    bench_serve_rows,
    tokenizer_for,
    write_prompts,
)
from playground.lab.load import (
    LoadClient,
    LoadResult,
    auto_workers,
    capacity,
    run_load,
)
from playground.lab.stats import percentile
from playground.specs.presets import Variant

Engine = Literal["auto", "playground", "vllm-bench"]
METRICS = ("ttft", "tpot", "itl", "e2e")
CSV_HEADER = ["concurrency", "block", "tool", "request", "ok", "ttft_ms", "tpot_ms", "e2e_ms",
              "output_tokens", "itl_ms",
              # open-loop (rate) levels only; empty otherwise, and absent in older files
              "rate_per_s", "send_delay_ms", "ttft_from_due_ms", "e2e_from_due_ms",
              # the Ray node whose reader measured the row (Ray readers only)
              "node"]
FILLER = "Summarise the history of the printing press for a museum visitor."


def holds(concurrency: int, cpus: int | None = None) -> bool:
    """Whether the load path keeps up here: one reader up to 32 streams, Ray readers of 16
    streams each on at most half the cores past that (lab/load.capacity)."""
    return concurrency <= capacity(auto_workers(concurrency, cpus))


def choose(engine: Engine, concurrency: int, has_vllm: bool, cpus: int | None = None) -> str:
    if engine != "auto":
        return engine
    if holds(concurrency, cpus) or not has_vllm:
        return "playground"
    return "vllm-bench"


def prompts(tag: str, n: int) -> list[str]:
    return [f"[{tag} request {i}] {FILLER}" for i in range(n)]


def fixed_variant(output_len: int, client: str = "raw") -> Variant:
    return Variant(name=f"fixed-{output_len}-{client}", stream=True, thinking=False,
                   temperature=0.0, max_tokens=output_len, ignore_eos=True,
                   client=client)  # type: ignore[arg-type]


def ours(base_url: str, api_key: str, model: str, texts: Sequence[str], output_len: int,
         concurrency: int, *, client: str = "raw", workers: int | None = None,
         timeout_s: float = 600.0, ray_address: str | None = None,
         ) -> tuple[list[dict[str, Any]], LoadResult]:
    """Rows, and the run (wall seconds from start to last record, reader processes, and on Ray
    the nodes and the start barrier's uncertainty)."""
    v = fixed_variant(output_len, client)
    recs = [new_recording(v, request.build(v, t, model), base_url) for t in texts]
    res = asyncio.run(run_load(recs, concurrency=concurrency, workers=workers,
                               client=LoadClient(api_key, timeout_s=timeout_s,
                                                 read_timeout_s=timeout_s),
                               ray_address=ray_address))
    return [_row(r) for r in recs], res


def ours_at(base_url: str, api_key: str, model: str, texts: Sequence[str], output_len: int,
            rate: Rate, *, seed: int = 0, max_concurrency: int | None = None,
            client: str = "raw", timeout_s: float = 600.0
            ) -> tuple[list[dict[str, Any]], float]:
    """An open-loop level in this process: request i sent when `rate`'s schedule says
    (lab/arrivals, vllm bench's definitions). Rows, and wall seconds (start -> last record)."""
    v = fixed_variant(output_len, client)
    recs = [new_recording(v, request.build(v, t, model), base_url) for t in texts]
    due = schedule(rate, len(recs), seed)

    async def go() -> float:
        pool = LoadClient(api_key, timeout_s=timeout_s, read_timeout_s=timeout_s).pool()
        try:
            return await run_at(pool, recs, due, max_concurrency=max_concurrency,
                                timeout_s=timeout_s)
        finally:
            await pool.aclose()

    start = asyncio.run(go())
    ends = [r.raw.t_last for r in recs if r.raw.t_last is not None]
    return [_row(r) for r in recs], (max(ends) - start) if ends else 0.0


def _row(r: Recording) -> dict[str, Any]:
    m = r.metrics()
    ok = r.error is None and m.ttft_ms is not None
    server_ttft = (r.raw.server_metrics or {}).get("time_to_first_token_ms")
    return {"ok": ok, "ttft": m.ttft_ms, "tpot": m.tpot_ms, "e2e": m.e2e_ms,
            "itl": m.itl_ms if ok else [], "output_tokens": m.completion_tokens,
            "error": str(r.error) if r.error else "",
            # client TTFT - the server's own TTFT (from scheduling)
            "overhead": m.ttft_ms - server_ttft if ok and server_ttft else None,
            # open loop only: the client's send delay, and latency from the schedule
            "send_delay": m.send_delay_ms, "ttft_from_due": m.ttft_from_due_ms,
            "e2e_from_due": m.e2e_from_due_ms, "node": r.node}


# The client is the bottleneck when its send delay (p99) passes this share of TTFT (p50) and
# CLIENT_BOUND_MS (below that it is event-loop jitter, whatever the TTFT).
CLIENT_BOUND_SHARE, CLIENT_BOUND_MS = 0.10, 5.0
# A rate sweep is saturated when a level's throughput rose less than this over the level
# before while its queueing grew (`saturated`).
SATURATION_GAIN, QUEUE_GROWTH = 1.05, 2.0


def saturated(before: SweepLevel, now: SweepLevel) -> str:
    """Why the rate sweep stops after `now` ("" to go on): its throughput rose less than
    SATURATION_GAIN while queueing grew -- TTFT from the schedule (p50) grew QUEUE_GROWTH-fold,
    or the server's own waiting queue (peak num_requests_waiting) grew."""
    gained, was = now.req_per_s, before.req_per_s
    if gained is None or not was or gained >= was * SATURATION_GAIN:
        return ""
    signs = []
    waited, waited_before = now.ttft_from_due_p50_ms, before.ttft_from_due_p50_ms
    if waited and waited_before and waited >= waited_before * QUEUE_GROWTH:
        signs.append(f"TTFT from the schedule grew {waited_before:.0f} -> {waited:.0f} ms (p50)")
    queue = now.server.peak_waiting if now.server else None
    queue_before = before.server.peak_waiting if before.server else None
    if queue is not None and queue_before is not None and queue > queue_before:
        signs.append(f"the server's waiting queue grew {queue_before:.0f} -> {queue:.0f} "
                     "(peak)")
    if not signs:
        return ""
    return (f"saturated: throughput {was:.2f} -> {gained:.2f} req/s (less than "
            f"{SATURATION_GAIN - 1:.0%} more) while " + " and ".join(signs))


def vllm_bench(base_url: str, api_key: str, model: str, model_root: str | None,
               texts: Sequence[str], output_len: int, concurrency: int, python: str,
               work: Path) -> tuple[list[dict[str, Any]], float]:
    data = write_prompts(work / f"prompts-c{concurrency}.jsonl", list(texts))
    spec = BenchServe(base_url, model, tokenizer_for(model, model_root), concurrency,
                      dataset=data, num_prompts=len(texts), output_len=output_len)
    return bench_serve_rows(spec, api_key, python, work / f"vllm-bench-c{concurrency}.log")


def summarise(rows: Sequence[dict[str, Any]], walls: Sequence[float]) -> dict[str, Any]:
    """p50/p99 of each metric (ITL: over every gap of every request), completed requests per
    second of wall time, and how many failed."""
    ok = [r for r in rows if r["ok"]]
    out: dict[str, Any] = {"n": len(rows), "failed": len(rows) - len(ok)}
    for m in METRICS:
        vals = [x for r in ok for x in r["itl"]] if m == "itl" else [r[m] for r in ok]
        out[f"{m}_p50_ms"] = percentile(vals, 50)
        out[f"{m}_p99_ms"] = percentile(vals, 99)
    out["req_per_s"] = len(ok) / sum(walls) if walls and sum(walls) > 0 else None
    # requests whose tokens all came in one chunk (the server merged them): TPOT 0, counted in
    # the TPOT percentiles as vllm bench counts them, and said so here
    out["one_chunk"] = sum(1 for r in ok if (r.get("output_tokens") or 0) > 1 and not r["itl"])
    out["ttft_minus_server_ttft_p50_ms"] = percentile([r.get("overhead") for r in ok], 50)
    delays = [r["send_delay"] for r in rows if r.get("send_delay") is not None]
    if delays:  # an open-loop level: the client's own delay, and latency from the schedule
        for m in ("send_delay", "ttft_from_due", "e2e_from_due"):
            vals = delays if m == "send_delay" else [r.get(m) for r in ok]
            out[f"{m}_p50_ms"] = percentile(vals, 50)
            out[f"{m}_p99_ms"] = percentile(vals, 99)
        ttft = out["ttft_p50_ms"]
        out["client_bound"] = bool(ttft and out["send_delay_p99_ms"] is not None
                                   and out["send_delay_p99_ms"] > max(
                                       CLIENT_BOUND_SHARE * ttft, CLIENT_BOUND_MS))
    return out


class RowWriter:
    """Per-request rows as CSV (the raw data behind every published percentile)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._f = path.open("w", newline="", encoding="utf-8")
        self._w = csv.writer(self._f)
        self._w.writerow(CSV_HEADER)

    def write(self, concurrency: int, block: int, tool: str,
              rows: Sequence[dict[str, Any]], rate: float | None = None) -> None:
        for i, r in enumerate(rows):
            self._w.writerow([concurrency, block, tool, i, int(r["ok"]),
                              *(_f(r[m]) for m in ("ttft", "tpot", "e2e")),
                              r["output_tokens"], " ".join(f"{x:.3f}" for x in r["itl"]),
                              "" if rate is None else f"{rate:g}",
                              *(_f(r.get(m)) for m in ("send_delay", "ttft_from_due",
                                                       "e2e_from_due")),
                              r.get("node") or ""])
        self._f.flush()

    def close(self) -> None:
        self._f.close()


# How a results file's vllm bench rows were written (its JSON's "vllm_bench_rows"):
# "role-aligned" -- the role chunk's gap moved into TTFT on every row (engine.aligned; now);
# "raw" -- as vllm bench measured them (the first H200 runs);
# "count-aligned" -- moved only where the gaps numbered the tokens (the first CPU runs): a row
# with fewer than tokens - 1 gaps was left raw.
WRITTEN = ("role-aligned", "raw", "count-aligned")


def read_rows(path: Path, vllm_bench_rows: str = "role-aligned") -> list[dict[str, Any]]:
    """The CSV (or .csv.gz) back as rows, for re-summarising published data, with vllm bench's
    rows on the load path's definitions however they were written (`WRITTEN`)."""
    if vllm_bench_rows not in WRITTEN:
        raise ValueError(f"vllm_bench_rows: {vllm_bench_rows!r} is not one of "
                         f"{', '.join(WRITTEN)}")
    out = []
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        for r in csv.DictReader(f):
            n = int(r["output_tokens"]) if r["output_tokens"] else None
            row: dict[str, Any] = {
                "ok": r["ok"] == "1", "ttft": _num(r["ttft_ms"]), "tpot": _num(r["tpot_ms"]),
                "e2e": _num(r["e2e_ms"]), "output_tokens": n,
                "itl": [float(x) for x in r["itl_ms"].split()]}
            if (r["tool"] == "vllm-bench" and row["ok"] and row["ttft"] is not None
                    and (vllm_bench_rows == "raw" or (vllm_bench_rows == "count-aligned"
                                                      and n and len(row["itl"]) < n - 1))):
                row = aligned(row["ttft"], row["itl"], n)
            elif (row["ok"] and row["tpot"] is None and n and n > 1
                  and row["ttft"] is not None and row["e2e"] is not None):
                # written when a one-chunk reply had no TPOT: it is 0 (engine.aligned)
                row["tpot"] = (row["e2e"] - row["ttft"]) / (n - 1)
            row.update(concurrency=int(r["concurrency"]), block=int(r["block"]),
                       tool=r["tool"], rate=_num(r.get("rate_per_s") or ""),
                       **{m: _num(r.get(f"{m}_ms") or "") for m in (
                           "send_delay", "ttft_from_due", "e2e_from_due")},
                       node=r.get("node") or None)
            out.append(row)
    return out


def _f(x: float | None) -> str:
    return "" if x is None else f"{x:.3f}"


def _num(s: str) -> float | None:
    return float(s) if s else None


def cpu_count() -> int:
    return os.cpu_count() or 1

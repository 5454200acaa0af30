"""Fidelity analysis: one reader's numbers against vllm bench serve's on the same server, block by
block (docs/load.md).

The blocks of the readers were run interleaved (benchmarks/fidelity.py rotates their order), so
block i of a reader and block i of vllm bench form a pair. Each number (TTFT, TPOT, ITL p50/p99,
req/s) is judged on its per-block values with lab/paired: the ratio reader / vllm bench, its 95%
interval from a sign-flip test over the pairs, and one of three verdicts -- "within 5%" only
when the whole interval lies inside 0.95-1.05 (throughput: at least 0.95), "outside 5%" only
when it lies wholly outside, otherwise "not resolved at this n" with about how many pairs would
resolve it. The point ratio of the pooled rows is shown next to it, never judged alone.
vllm bench's own block-to-block spread is kept as a description of the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from playground.lab.paired import PairedRatio, judge, paired_ratio, pairs_needed
from playground.lab.sweep import METRICS, summarise

REFERENCE = "vllm-bench"
KEYS = [f"{m}_{q}_ms" for m in ("ttft", "tpot", "itl") for q in ("p50", "p99")] + ["req_per_s"]
TARGET = 0.05

Block = tuple[Sequence[dict[str, Any]], float]  # (rows, wall seconds)


def spread(blocks: Sequence[dict[str, Any]], key: str) -> float | None:
    """(max - min) / median of one number over blocks of the same reader."""
    vals = sorted(b[key] for b in blocks if b.get(key) is not None)
    if len(vals) < 2:
        return None
    mid = vals[len(vals) // 2] if len(vals) % 2 else (vals[len(vals) // 2 - 1]
                                                      + vals[len(vals) // 2]) / 2
    return (vals[-1] - vals[0]) / mid if mid else None


def verdict(key: str, reference: Sequence[float | None], reader: Sequence[float | None]
            ) -> tuple[str, PairedRatio]:
    """The verdict on one number from its per-block values (pairs in block order)."""
    one_sided = key == "req_per_s"  # throughput: at least 95% of vllm bench's
    got = paired_ratio(reference, reader)
    needed = pairs_needed(reference, reader, TARGET, one_sided=one_sided)
    return judge(got, TARGET, one_sided=one_sided, needed=needed), got


def level(concurrency: int, blocks: dict[str, list[Block]], **extra: Any) -> dict[str, Any]:
    """Pooled and per-block summaries of every reader at one concurrency, each reader's ratios
    to vllm bench, vllm bench's own spread, and a verdict per number."""
    out: dict[str, Any] = {"concurrency": concurrency, **extra, "tools": list(blocks)}
    for tool, bs in blocks.items():
        out[tool] = summarise([r for rows, _ in bs for r in rows], [w for _, w in bs])
        out[f"{tool}_blocks"] = [summarise(rows, [w]) for rows, w in bs]
    ref = out.get(REFERENCE)
    if ref is None:
        return out
    aa = {k: spread(out[f"{REFERENCE}_blocks"], k) for k in KEYS}
    out["vllm_bench_block_spread"] = aa
    for tool in blocks:
        if tool == REFERENCE:
            continue
        ratios = {k: (out[tool][k] / ref[k] if out[tool].get(k) is not None and ref.get(k)
                      else None) for k in KEYS}
        out[f"{tool}_vs_vllm_bench"] = ratios
        judged = {k: verdict(k, [b.get(k) for b in out[f"{REFERENCE}_blocks"]],
                             [b.get(k) for b in out[f"{tool}_blocks"]]) for k in KEYS}
        out[f"{tool}_verdicts"] = {k: v for k, (v, _) in judged.items()}
        out[f"{tool}_paired"] = {k: {"pairs": r.n_pairs, "ratio": r.ratio,
                                     "ci95": list(r.ci) if r.ci else None, "p": r.p_value}
                                 for k, (_, r) in judged.items()}
        out[f"{tool}_within_target"] = all(v == "within 5%"
                                           for v in out[f"{tool}_verdicts"].values())
    return out


__all__ = ["KEYS", "METRICS", "REFERENCE", "level", "spread", "verdict"]

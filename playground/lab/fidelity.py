"""Fidelity analysis: one reader's numbers against vllm bench serve's on the same server, block by
block, with vllm bench's own block-to-block spread as the control (docs/load.md).

A ratio is judged against the 5% target only when the run can resolve it: if vllm bench's blocks
land further apart from each other than the two readers do, the difference is "not resolved"
(this run cannot tell), never "within" or "outside".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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


def verdict(key: str, ratio: float | None, aa: float | None) -> str:
    if ratio is None:
        return "no data"
    off = ratio - 1
    ok = off >= -TARGET if key == "req_per_s" else abs(off) <= TARGET
    if ok:
        return "within 5%"
    if aa is not None and abs(off) <= aa:
        return f"not resolved (vllm bench's own blocks spread {100 * aa:.0f}%)"
    return "outside 5%"


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
        out[f"{tool}_verdicts"] = {k: verdict(k, ratios[k], aa[k]) for k in KEYS}
        out[f"{tool}_within_target"] = all(v == "within 5%"
                                           for v in out[f"{tool}_verdicts"].values())
    return out


__all__ = ["KEYS", "METRICS", "REFERENCE", "level", "spread", "verdict"]

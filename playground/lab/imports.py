"""Runs made by other tools, read into this project's typed records (`playground runs import`).

`vllm bench serve --save-result --save-detailed` writes one JSON document with per-request
lists: `ttfts` (s), `itls` (s, the gaps between the chunks after the first), `output_lens`,
`input_lens` and `errors`. Each request becomes a `RequestRecord` whose raw clock readings are
rebuilt from those durations (sent at 0), so every metric is derived by core/metrics like our
own, on our definitions:

- TTFT: vllm bench stamps it at the first chunk with `choices`, which on vLLM is the role-only
  chunk; its first gap is then role chunk -> first token. That gap moves into TTFT (first
  token), as lab/engine.aligned does for the load path's fidelity runs. The role chunk's time is
  kept as the record's first chunk (`first_chunk_ms`: vllm bench's own TTFT).
- TPOT = (E2E - TTFT) / (tokens - 1), vllm bench's definition and ours.
- ITL: the gaps between chunks; where the server merged tokens into one chunk there is one gap
  for several tokens (vllm bench's ITLs are the same).

What the file does not hold stays unknown (None): the server's own timings, the answer text.
A file that is not such a result fails naming the field it lacks. GuideLLM's and AIPerf's
results: lab/imports_tools (`read_result` tells the three apart).
"""

from __future__ import annotations

import json
from itertools import accumulate
from pathlib import Path
from typing import Any

from playground.core.metrics import RawTimings, Usage
from playground.core.record import ErrorInfo, RequestRecord
from playground.errors import PresetError
from playground.lab import imports_tools
from playground.lab.engine import aligned
from playground.lab.store import RunMeta
from playground.specs.presets import Variant

VLLM_BENCH = "vllm bench serve"
PER_REQUEST = ("ttfts", "itls", "output_lens", "errors")
NOTES = {VLLM_BENCH: (
    "imported from vllm bench serve's detailed result: TTFT moved from its role chunk to the "
    "first token (its first gap), TPOT = (E2E - TTFT) / (tokens - 1) as both tools define "
    "it; ITLs are gaps between chunks, as it measured them; no server timings or text")}


def read_result(path: Path, label: str | None = None
                ) -> tuple[RunMeta, list[RequestRecord]]:
    """Any supported tool's result file -> (the run's meta line, one record per request)."""
    tool, content = imports_tools.sniff(path)
    if tool == imports_tools.GUIDELLM:
        return imports_tools.read_guidellm(content, path, label)
    if tool == imports_tools.AIPERF:
        return imports_tools.read_aiperf(content, path, label)
    return read_vllm_bench(path, label)


def read_vllm_bench(path: Path, label: str | None = None
                    ) -> tuple[RunMeta, list[RequestRecord]]:
    """One vllm bench serve result file -> (the run's meta line, one record per request)."""
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PresetError("(file)", f"not a readable JSON file: {e}", source=str(path)) from None
    if not isinstance(doc, dict):
        raise PresetError("(file)", "expected a JSON object (vllm bench serve's result)",
                          source=str(path))
    missing = [k for k in PER_REQUEST if not isinstance(doc.get(k), list)]
    if missing:
        raise PresetError(missing[0], "missing: not a vllm bench serve result saved with "
                          "--save-result --save-detailed (its per-request lists)",
                          source=str(path))
    n = len(doc["ttfts"])
    if any(len(doc[k]) != n for k in PER_REQUEST):
        raise PresetError("itls", "per-request lists of different lengths", source=str(path))
    inputs = doc.get("input_lens") if isinstance(doc.get("input_lens"), list) else [None] * n
    model = str(doc.get("model_id") or "?")
    variant = Variant(name=imports_tools.variant_name(label or f"vllm-bench-{path.stem}"),
                      stream=True)
    meta = RunMeta(model=model, base_url=None, machine=None,
                   tool=VLLM_BENCH, imported_from=str(path), notes=NOTES[VLLM_BENCH],
                   date=doc.get("date"), max_concurrency=doc.get("max_concurrency"),
                   request_rate=doc.get("request_rate"))
    records = [_record(variant, model, i, ttft, itl, out, inp, err)
               for i, (ttft, itl, out, inp, err) in enumerate(zip(
                   doc["ttfts"], doc["itls"], doc["output_lens"], inputs, doc["errors"],
                   strict=True))]
    return meta, records


def _record(variant: Variant, model: str, i: int, ttft_s: Any, itl_s: Any, out: Any,
            inp: Any, err: Any) -> RequestRecord:
    request = {"model": model, "stream": True, "imported_from": VLLM_BENCH}
    n = int(out) if isinstance(out, int | float) else None
    usage = Usage(prompt_tokens=int(inp) if isinstance(inp, int | float) else None,
                  completion_tokens=n)
    if err or not ttft_s:
        raw = RawTimings(streaming=True, t_send=0.0, usage=usage)
        return RequestRecord(variant=variant, base_url="", status="error", request=request,
                             raw=raw, error=ErrorInfo(type=VLLM_BENCH,
                                                      message=str(err or "no first token")),
                             trial=i, phase="timed", example=i, repetition=0)
    row = aligned(float(ttft_s) * 1000, [float(x) * 1000 for x in itl_s or []], n)
    first = row["ttft"] / 1000
    times = [first + t / 1000 for t in accumulate(row["itl"], initial=0.0)]
    raw = RawTimings(streaming=True, t_send=0.0, t_first_chunk=float(ttft_s),
                     t_first_content=first, t_last=times[-1], token_times=times, usage=usage,
                     finish_reason="length")
    return RequestRecord(variant=variant, base_url="", status="done", request=request, raw=raw,
                         trial=i, phase="timed", example=i, repetition=0)

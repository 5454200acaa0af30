"""GuideLLM's and AIPerf's per-request results, read into this project's typed records
(`playground runs import`; vllm bench serve's reader is lab/imports).

Every request becomes a `RequestRecord` whose clock readings are rebuilt from what the tool
kept (sent at 0), so core/metrics derives TTFT, E2E and TPOT on our definitions:

- TTFT: the first token, reasoning or answer (both tools stamp the first chunk that carries a
  token; neither counts the role-only chunk). Where the tool says the output was reasoning, the
  first token is a reasoning token and TTFA stays unknown, as it does for mixed output.
- E2E: request sent -> last token chunk. TPOT = (E2E - TTFT) / (tokens - 1), tokens as the
  server's usage reported them.

What each tool keeps, and so what differs (said in each import's notes):

- GuideLLM (`guidellm run --output kind=json`): per request, the start, the first chunk, the
  first and last token chunks and the end, no per-chunk times -- so no ITL distribution. Its own
  `time_per_output_token_ms` is (last token - start) / tokens, TTFT included; our TPOT is its
  `inter_token_latency_ms`. A file with several benchmarks (a sweep) gives one variant each.
- AIPerf (`aiperf profile --export-level records`, profile_export.jsonl): per request,
  `time_to_first_token`, `inter_chunk_latency` (a gap per token; 0 where several tokens
  arrived in one read) and `request_latency` (no first-chunk time: the role chunk is not kept,
  so vllm bench's TTFT reading stays unknown); warm-up records are left out. Its
  `inter_token_latency` divides the same decode time by its own count of the output text
  re-tokenized (`output_sequence_length`); TPOT divides by the server's usage count, so the two
  differ when the counts do.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from pathlib import Path
from typing import Any

from playground.core.metrics import RawTimings, Usage
from playground.core.record import ErrorInfo, RequestRecord
from playground.errors import PresetError
from playground.lab.store import RunMeta
from playground.specs.presets import Variant

GUIDELLM, AIPERF = "GuideLLM", "AIPerf"
NOTES = {
    GUIDELLM: (
        "imported from GuideLLM's benchmarks JSON: TTFT at its first token chunk, E2E at its "
        "last token chunk; TPOT = (E2E - TTFT) / (tokens - 1), which is GuideLLM's "
        "inter_token_latency_ms (its time_per_output_token_ms also holds TTFT); it keeps no "
        "per-chunk times, so no ITL distribution; no server timings or text"),
    AIPERF: (
        "imported from AIPerf's profile_export.jsonl: TTFT and the gaps between tokens "
        "(inter_chunk_latency, 0 where tokens arrived in one read) as it measured them; "
        "TPOT = (E2E - TTFT) / (tokens - 1) with the server's token count (AIPerf's "
        "inter_token_latency divides by its own count of the text re-tokenized); warm-up "
        "records left out; no server timings or text"),
}


def variant_name(text: str) -> str:
    """A variant name (1-64 letters, digits, '.', '_', '-') from a tool's or a user's label."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:64]
    return slug or "imported"


def _num(x: Any) -> float | None:
    return float(x) if isinstance(x, int | float) and not isinstance(x, bool) else None


def _int(x: Any) -> int | None:
    v = _num(x)
    return int(v) if v is not None else None


def _record(variant: Variant, model: str, i: int, tool: str, *, first: float | None,
            first_chunk: float | None, last: float | None, times: list[float],
            usage: Usage, reasoning: bool, error: str | None, sent: float = 0.0
            ) -> RequestRecord:
    """`first`, `first_chunk`, `last`, `times`: seconds since this request was sent; `sent`:
    seconds since the run's first request was sent (its place on the run's time axis)."""
    request = {"model": model, "stream": True, "imported_from": tool}
    if error is not None or first is None or last is None:
        return RequestRecord(
            variant=variant, base_url="", status="error", request=request,
            raw=RawTimings(streaming=True, t_send=sent, usage=usage),
            error=ErrorInfo(type=tool, message=error or "no first token"), trial=i,
            phase="timed", example=i, repetition=0)
    first, last = sent + first, sent + last
    raw = RawTimings(streaming=True, t_send=sent,
                     t_first_chunk=None if first_chunk is None else sent + first_chunk,
                     t_first_reasoning=first if reasoning else None,
                     t_first_content=None if reasoning else first, t_last=last,
                     token_times=[sent + t for t in times], usage=usage,
                     finish_reason="length")
    return RequestRecord(variant=variant, base_url="", status="done", request=request, raw=raw,
                         trial=i, phase="timed", example=i, repetition=0)


def read_guidellm(doc: dict[str, Any], path: Path, label: str | None
                  ) -> tuple[RunMeta, list[RequestRecord]]:
    benches = doc.get("benchmarks")
    if not isinstance(benches, list) or not benches:
        raise PresetError("benchmarks", "empty: GuideLLM wrote no benchmark", source=str(path))
    model = "?"
    records: list[RequestRecord] = []
    starts = [_num(r.get("request_start_time")) for b in benches
              for rs in (b.get("requests") or {}).values() if isinstance(rs, list) for r in rs]
    t0 = min((t for t in starts if t is not None), default=0.0)
    for b in benches:
        config = b.get("config") or {}
        model = str((config.get("backend") or {}).get("model") or model)
        strategy = config.get("strategy") or {}
        kind = str(strategy.get("type_") or "benchmark")
        level = strategy.get("streams") or strategy.get("rate")
        name = f"{label or 'guidellm'}-{kind}" + (f"-{level}" if level is not None else "")
        variant = Variant(name=variant_name(name if len(benches) > 1 or not label else label),
                          stream=True)
        requests = b.get("requests")
        if not isinstance(requests, dict):
            raise PresetError("benchmarks[].requests", "missing: not a GuideLLM benchmarks "
                              "JSON with its per-request lists", source=str(path))
        for status in ("successful", "errored", "incomplete"):
            for r in requests.get(status) or []:
                records.append(_guidellm_request(variant, model, len(records), r, status, t0))
    meta = RunMeta(model=model, tool=GUIDELLM, imported_from=str(path), notes=NOTES[GUIDELLM],
                   tool_version=(doc.get("metadata") or {}).get("guidellm_version"))
    return meta, records


def _guidellm_request(variant: Variant, model: str, i: int, r: dict[str, Any],
                      status: str, t0: float) -> RequestRecord:
    timings = (r.get("info") or {}).get("timings") or {}
    start = _num(r.get("request_start_time")) or _num(timings.get("request_start"))

    def since(key: str) -> float | None:
        t = _num(timings.get(key))
        return None if t is None or start is None else t - start

    usage = Usage(prompt_tokens=_int(r.get("prompt_tokens")),
                  completion_tokens=_int(r.get("output_tokens")))
    reasoning = bool(r.get("reasoning_output")) and not r.get("output")
    error = None
    if status != "successful":
        info_error = (r.get("info") or {}).get("error")
        error = str(info_error or f"{status} in GuideLLM")
    return _record(variant, model, i, GUIDELLM, first=since("first_token_iteration"),
                   first_chunk=since("first_request_iteration"),
                   last=since("last_token_iteration") or since("request_end"), times=[],
                   usage=usage, reasoning=reasoning, error=error,
                   sent=0.0 if start is None else start - t0)


def _config_models(doc: Any) -> list[str]:
    """The served model names in AIPerf's configuration: `input_config.models.items[].name`
    (0.13) or `input_config.endpoint.model_names` (earlier releases); [] when neither holds."""
    config = doc.get("input_config") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        return []
    models = config.get("models")
    items = models.get("items") if isinstance(models, dict) else None
    names = ([i.get("name") for i in items if isinstance(i, dict)]
             if isinstance(items, list) else [])
    endpoint = config.get("endpoint")
    if not names and isinstance(endpoint, dict):
        names = endpoint.get("model_names") or []
    return [n for n in names if isinstance(n, str) and n] if isinstance(names, list) else []


def aiperf_model(path: Path) -> tuple[str, str]:
    """(served model name, where it came from) for an AIPerf records file.

    The records carry no model name. AIPerf writes its configuration next to them, in
    profile_export_aiperf.json (AIPerf says that section is not a stable format, so two
    layouts are read): from `<prefix>profile_export_aiperf.json` beside
    `<prefix>profile_export.jsonl`, or a plain profile_export_aiperf.json in the same folder."""
    names = [path.name.replace("profile_export.jsonl", "profile_export_aiperf.json"),
             "profile_export_aiperf.json"]
    for name in dict.fromkeys(n for n in names if n != path.name):
        aggregate = path.with_name(name)
        try:
            models = _config_models(json.loads(aggregate.read_text("utf-8")))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue
        if models:
            return ", ".join(models), f"model name from {aggregate.name}"
    return "?", ("model unknown: its records name none, and no profile_export_aiperf.json "
                 "(AIPerf's configuration) was found beside the file")


def read_aiperf(lines: list[dict[str, Any]], path: Path, label: str | None
                ) -> tuple[RunMeta, list[RequestRecord]]:
    model, model_note = aiperf_model(path)
    variant = Variant(name=variant_name(label or "aiperf"), stream=True)
    records: list[RequestRecord] = []
    starts = [(x.get("metadata") or {}).get("request_start_ns") for x in lines]
    t0 = min((t for t in starts if isinstance(t, int)), default=0)
    for n, line in enumerate(lines, 1):
        meta = line.get("metadata")
        metrics = line.get("metrics")
        if not isinstance(meta, dict) or not isinstance(metrics, dict):
            raise PresetError(f"line {n}", "not an AIPerf record (metadata and metrics)",
                              source=str(path))
        if meta.get("benchmark_phase", "profiling") != "profiling":
            continue  # warm-up

        def value(key: str, metrics: dict[str, Any] = metrics) -> Any:
            m = metrics.get(key)
            return m.get("value") if isinstance(m, dict) else None

        ttft, e2e = _num(value("time_to_first_token")), _num(value("request_latency"))
        gaps = [g for g in (value("inter_chunk_latency") or []) if _num(g) is not None]
        n_tok = _int(value("usage_completion_tokens")) or _int(value("output_sequence_length"))
        n_reason = _int(value("usage_reasoning_tokens")) or _int(value("reasoning_token_count"))
        usage = Usage(prompt_tokens=_int(value("usage_prompt_tokens")), completion_tokens=n_tok,
                      reasoning_tokens=n_reason)
        first = ttft / 1000 if ttft is not None else None
        times = ([first + g / 1000 for g in accumulate(gaps, initial=0.0)]
                 if first is not None else [])
        last = times[-1] if times else (e2e / 1000 if e2e is not None else None)
        error = line.get("error")
        start = meta.get("request_start_ns")
        records.append(_record(
            variant, model, len(records), AIPERF, first=first, first_chunk=None, last=last,
            times=times, usage=usage, reasoning=bool(n_reason),
            error=None if error is None else str(error.get("message", error)
                                                 if isinstance(error, dict) else error),
            sent=(start - t0) / 1e9 if isinstance(start, int) else 0.0))
    if not records:
        raise PresetError("metadata.benchmark_phase", "no profiling records (only warm-up?)",
                          source=str(path))
    return RunMeta(model=model, tool=AIPERF, imported_from=str(path),
                   notes=f"{NOTES[AIPERF]}; {model_note}"), records


def sniff(path: Path) -> tuple[str, Any]:
    """(tool, parsed content) of a result file: vllm bench serve, GuideLLM or AIPerf."""
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise PresetError("(file)", f"not readable: {e}", source=str(path)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        try:
            lines = [json.loads(x) for x in text.splitlines() if x.strip()]
        except json.JSONDecodeError as e:
            raise PresetError("(file)", f"neither JSON nor JSON lines: {e}",
                              source=str(path)) from None
        if lines and all(isinstance(x, dict) and "metrics" in x for x in lines):
            return AIPERF, lines
        raise PresetError("(file)", "JSON lines, but not AIPerf's profile_export.jsonl "
                          "(records with metadata and metrics)", source=str(path)) from None
    if isinstance(doc, dict) and "benchmarks" in doc:
        return GUIDELLM, doc
    if isinstance(doc, dict) and "metrics" in doc and "metadata" in doc:
        return AIPERF, [doc]  # a one-request export
    return "vllm bench serve", doc

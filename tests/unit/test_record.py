"""The typed record: format-1 lines (written before it existed) load, derived metrics are
recomputed from raw timestamps, and an unknown run format is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from playground.core.record import RequestRecord
from playground.errors import PresetError
from playground.lab.store import RunFile, parse_line, read_run
from tests.records import make_record

# A request line as the previous version wrote it (no "v", a stored "metrics" copy).
FORMAT_1 = {
    "kind": "request", "variant": {"name": "streaming", "stream": True, "max_tokens": 8},
    "base_url": "http://127.0.0.1:8000/v1", "status": "done",
    "request": {"model": "Qwen/Qwen3-0.6B", "messages": [], "max_tokens": 8, "stream": True},
    "raw": {"streaming": True, "t_send": 1.0, "t_headers": 1.01, "t_first_chunk": 1.05,
            "t_first_reasoning": None, "t_first_content": 1.05, "t_last": 1.4,
            "token_times": [1.05, 1.4], "token_text": [["", "a"], ["", "b"]],
            "usage": {"prompt_tokens": 5, "completion_tokens": 2, "reasoning_tokens": None,
                      "cached_tokens": None}, "finish_reason": "length", "http_status": 200,
            "server_metrics": None},
    "metrics": {"ttft_ms": 999.0, "e2e_ms": 999.0}, "content": "ab", "reasoning": "",
    "error": None, "clock_origin": [0.0, 0.0], "trial": 3, "phase": "timed", "example": 0,
    "repetition": 0, "score": None, "server_preset": None}


def test_a_format_1_line_loads_and_its_metrics_are_recomputed() -> None:
    rec = parse_line(json.loads(json.dumps(FORMAT_1)), where="old.jsonl line 1")
    assert isinstance(rec, RequestRecord) and rec.v == 1
    assert rec.metrics.ttft_ms == pytest.approx(50.0)  # from raw, not the stored 999
    assert rec.metrics.e2e_ms == pytest.approx(400.0)


def test_an_unknown_format_or_a_bad_field_is_named() -> None:
    with pytest.raises(PresetError, match="run format 3"):
        parse_line({**FORMAT_1, "v": 3}, where="x")
    with pytest.raises(PresetError, match=r"status.*\(run format 1\)"):
        parse_line({**FORMAT_1, "status": "weird"}, where="x")


def test_store_round_trip_keeps_every_raw_stamp(tmp_path: Path) -> None:
    f = RunFile(tmp_path / "r.jsonl")
    rec = make_record("a", 200.0, 20.0)
    f.append(rec)
    f.path.write_text(f.path.read_text() + '{"kind": "requ', "utf-8")  # a torn last line
    run = read_run(f.path)
    assert run.torn_lines == 1 and len(run.requests) == 1
    assert run.requests[0].raw == rec.raw and run.requests[0].v == 2

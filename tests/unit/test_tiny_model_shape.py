"""benchmarks/tiny_model_shape: its comparison, on made-up rows (so the right answer is known).
The 4-stream rows are compared wave by wave (the 4 streams of a wave share the engine's steps),
never as independent requests."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.benchmod import load

NEW, OLD = "new: 32 x float32", "old: 128 x bfloat16"


def streams_rows(shape: str, waves: list[list[float]]) -> list[dict]:
    return [{"round": 0, "shape": shape, "mode": "4 streams", "request": w * 4 + i,
             "ttft_ms": v, "ms_per_token": v / 4}
            for w, wave in enumerate(waves) for i, v in enumerate(wave)]


def test_four_streams_are_compared_by_wave(capsys: pytest.CaptureFixture[str]) -> None:
    mod = load("tiny_model_shape")
    # 3 waves per shape: one wave's 4 streams move together, so n is 3, not 12. Every new
    # wave is faster than every old one, but 3 vs 3 cannot resolve it (the smallest two-sided
    # permutation p is 0.1); as 12 vs 12 requests it would look resolved.
    new = [[50.0, 51, 52, 53], [48.0, 49, 50, 51], [55.0, 56, 57, 58]]
    old = [[90.0, 91, 92, 93], [95.0, 96, 97, 98], [88.0, 89, 90, 91]]
    mod.summarize(streams_rows(NEW, new) + streams_rows(OLD, old), [NEW, OLD])
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "ms TTFT" in x)
    assert "(n=3 waves)" in line and "(n=3)" in line
    assert re.search(r"old 91\.5 ms TTFT .* new 51\.5 ", line)  # medians of the wave medians
    assert "not resolved at this n" in line


def test_summarize_reprints_a_raw_file(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    mod = load("tiny_model_shape")
    rows = streams_rows(NEW, [[10.0] * 4] * 8) + streams_rows(OLD, [[40.0] * 4] * 8)
    for r in rows[32:]:  # eight old waves that differ among themselves
        r["ttft_ms"] += r["request"] // 4
    raw = tmp_path / "raw.jsonl"
    raw.write_text("\n".join(['{"machine": {}, "tokens": 128}'] +
                             [json.dumps(r) for r in rows]) + "\n")
    argv, sys.argv = sys.argv, ["tiny_model_shape.py", "--summarize", str(raw)]
    try:
        assert mod.main() == 0
    finally:
        sys.argv = argv
    out = capsys.readouterr().out
    assert "4 streams: old 43.5 ms TTFT (n=8 waves), new 10.0 (n=8)" in out
    assert "greedy, ms a token: too few requests to compare" in out

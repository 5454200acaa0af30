"""GuideLLM's and AIPerf's results read into our records: on files the real tools wrote against a
real vLLM (tests/data/imports/, made by benchmarks/import_files.py; made.json says how), each
request's numbers must be the tool's own where the definitions agree, and two imported runs must
get the same calibrated verdicts as runs of ours."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from playground.errors import PresetError
from playground.lab.imports import read_result
from playground.lab.imports_tools import AIPERF, GUIDELLM, variant_name
from playground.lab.store import read_run
from playground.outputs.versus_view import timeline
from tests.records import make_record

DATA = Path(__file__).resolve().parents[1] / "data" / "imports"
GUIDE = DATA / "guidellm-benchmarks.json"
AIP = DATA / "aiperf-profile_export.jsonl"
AIP_CONFIG = DATA / "aiperf-profile_export_aiperf.json"


def cli_in(tmp_path: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    """`playground ARGS` with its runs under tmp_path."""
    env = {**os.environ, "PLAYGROUND_RUNS_DIR": str(tmp_path / "runs")}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "playground.cli", *args],
                              capture_output=True, text=True, env=env, timeout=120)

    return cli


def test_the_files_were_written_by_the_real_tools() -> None:
    made = json.loads((DATA / "made.json").read_text("utf-8"))
    assert set(made["versions"]) == {"guidellm", "aiperf"}
    assert json.loads(GUIDE.read_text("utf-8"))["metadata"]["guidellm_version"] == \
        made["versions"]["guidellm"]


def test_guidellm_requests_keep_its_own_ttft_and_inter_token_latency() -> None:
    meta, records = read_result(GUIDE)
    doc = json.loads(GUIDE.read_text("utf-8"))
    theirs = doc["benchmarks"][0]["requests"]["successful"]
    assert meta.model_extra is not None and meta.model_extra["tool"] == GUIDELLM
    assert meta.model == "Qwen/Qwen3-0.6B" and len(records) == len(theirs) == 8
    assert {r.name for r in records} == {"guidellm-concurrent-2"}
    for rec, t in zip(records, theirs, strict=True):
        m = rec.metrics
        assert rec.status == "done" and m.completion_tokens == t["output_tokens"] == 16
        assert m.ttft_ms == pytest.approx(t["time_to_first_token_ms"], abs=1e-3)
        assert m.tpot_ms == pytest.approx(t["inter_token_latency_ms"], abs=1e-3)  # our TPOT
        assert m.tpot_ms < t["time_per_output_token_ms"]  # theirs holds TTFT too
        assert m.first_chunk_ms is not None and m.first_chunk_ms <= m.ttft_ms  # the role chunk
        assert m.itl_ms == []  # no per-chunk times kept: no ITL invented
        # the demo model's output is all reasoning: TTFT yes, first answer token unknown
        assert t["output"] == "" and m.ttfa_ms is None and m.ttft_ms is not None
    # each request keeps its place on the run's time axis (from the run's first request)
    sent = [r.raw.t_send for r in records]
    assert min(sent) == 0 and max(sent) == pytest.approx(  # type: ignore[type-var]
        max(t["request_start_time"] for t in theirs) - min(t["request_start_time"]
                                                           for t in theirs))


def test_aiperf_requests_keep_its_ttft_gaps_and_inter_token_latency() -> None:
    meta, records = read_result(AIP, "mine")
    theirs = [json.loads(x)["metrics"] for x in AIP.read_text("utf-8").splitlines()]
    assert meta.model_extra is not None and meta.model_extra["tool"] == AIPERF
    # the records name no model: it comes from AIPerf's configuration beside them
    assert meta.model == "Qwen/Qwen3-0.6B" == json.loads(AIP_CONFIG.read_text("utf-8"))[
        "input_config"]["models"]["items"][0]["name"]
    assert "model name from aiperf-profile_export_aiperf.json" in meta.model_extra["notes"]
    assert all(r.request["model"] == "Qwen/Qwen3-0.6B" for r in records)
    assert len(records) == len(theirs) == 8 and {r.name for r in records} == {"mine"}
    for rec, t in zip(records, theirs, strict=True):
        m = rec.metrics
        assert m.ttft_ms == pytest.approx(t["time_to_first_token"]["value"], abs=1e-3)
        assert m.first_chunk_ms is None  # AIPerf keeps no role-chunk time: not invented
        assert m.itl_ms == pytest.approx(t["inter_chunk_latency"]["value"], abs=1e-6)
        assert m.e2e_ms == pytest.approx(t["request_latency"]["value"], abs=0.5)
        # AIPerf's own inter_token_latency divides its decode time by its count of the text
        # re-tokenized (output_sequence_length, 16-18 here); TPOT divides by the server's usage
        n = t["usage_completion_tokens"]["value"]
        assert m.completion_tokens == n == 16
        assert m.tpot_ms == pytest.approx(t["decode_duration"]["value"] / (n - 1), abs=1e-3)
        osl = t["output_sequence_length"]["value"]
        assert t["inter_token_latency"]["value"] == pytest.approx(
            t["decode_duration"]["value"] / (osl - 1), abs=1e-3)
        assert m.reasoning_tokens == t["usage_reasoning_tokens"]["value"] and m.ttfa_ms is None
    assert min(r.raw.t_send for r in records) == 0  # type: ignore[type-var]
    assert max(r.raw.t_send for r in records) > 0  # type: ignore[type-var]


def test_an_aiperf_file_alone_says_its_model_is_unknown(tmp_path: Path) -> None:
    alone = tmp_path / "profile_export.jsonl"
    alone.write_text(AIP.read_text("utf-8"))
    meta, records = read_result(alone)
    assert meta.model == "?" and len(records) == 8
    assert "no profile_export_aiperf.json" in (meta.model_extra or {})["notes"]
    # AIPerf's own file names, in its own folder: found
    (tmp_path / "profile_export_aiperf.json").write_text(AIP_CONFIG.read_text("utf-8"))
    assert read_result(alone)[0].model == "Qwen/Qwen3-0.6B"
    # the layout of AIPerf's releases before 0.13
    older = {"input_config": {"endpoint": {"model_names": ["org/older"], "type": "chat"}}}
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(older))
    assert read_result(alone)[0].model == "org/older"


def test_warm_up_records_are_left_out_and_bad_files_name_what_is_wrong(tmp_path: Path) -> None:
    lines = AIP.read_text("utf-8").splitlines()
    warm = json.loads(lines[0])
    warm["metadata"]["benchmark_phase"] = "warmup"
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("\n".join([json.dumps(warm), *lines[1:]]) + "\n")
    assert len(read_result(mixed)[1]) == len(lines) - 1
    other = tmp_path / "other.jsonl"
    other.write_text('{"a": 1}\n{"b": 2}\n')
    with pytest.raises(PresetError, match=re.escape("not AIPerf's profile_export.jsonl")):
        read_result(other)
    empty = tmp_path / "guidellm.json"
    empty.write_text(json.dumps({"benchmarks": [{"config": {}}]}))
    with pytest.raises(PresetError, match=re.escape("benchmarks[].requests")):
        read_result(empty)
    assert variant_name("vllm bench serve (result)") == "vllm-bench-serve-result"


def test_two_imported_tools_get_calibrated_verdicts(tmp_path: Path) -> None:
    cli = cli_in(tmp_path)

    for f in (GUIDE, AIP):
        out = cli("runs", "import", str(f))
        assert out.returncode == 0 and "imported 8 requests (0 failed)" in out.stdout, out.stderr
    a, b = sorted((tmp_path / "runs" / "imported").glob("*.jsonl"))
    assert {read_run(p).meta.model_extra["tool"] for p in (a, b)} == {GUIDELLM, AIPERF}  # type: ignore[index]
    cmp = cli("runs", "compare", str(a), str(b))
    assert cmp.returncode == 0, cmp.stderr
    verdicts = cmp.stdout[cmp.stdout.index("A: GuideLLM"):]
    assert "vs B: AIPerf" in verdicts and "guidellm-concurrent-2 vs aiperf" in verdicts
    assert "no ITL distribution" in verdicts and "warm-up records left out" in verdicts
    for label in ("TTFT", "TPOT", "E2E"):
        line = next(x for x in verdicts.splitlines() if x.strip().startswith(f"- {label} p50"))
        assert "[95% CI" in line and ("no detectable difference" in line
                                      or "B is lower" in line or "B is higher" in line), line


def test_runs_side_by_side_on_one_page(tmp_path: Path) -> None:
    """`runs compare A B C --html`: every run in the distributions and on its own time axis,
    and A against each other run with its verdict table."""
    cli = cli_in(tmp_path)

    for f in (GUIDE, AIP):
        assert cli("runs", "import", str(f)).returncode == 0
    a, b = sorted((tmp_path / "runs" / "imported").glob("*.jsonl"))
    page = tmp_path / "out" / "versus.html"
    out = cli("runs", "compare", str(a), str(b), str(a), "--html", str(page))
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("Holm over the 3 comparisons") == 2  # A vs B, A vs C
    text = page.read_text("utf-8")
    assert text.count('class="plotly-graph-div"') == 2  # distributions, timeline
    for letter, tool in (("A", "GuideLLM"), ("B", "AIPerf"), ("C", "GuideLLM")):
        assert f"{letter}: {tool} (" in text
    assert "no ITL distribution" in text and "warm-up records left out" in text
    heads = [h for h in text.split("<h2>")[1:] if " vs " in h.split("</h2>")[0]]
    assert [h.split("</h2>")[0][:13] for h in heads] == ["A: GuideLLM (", "A: GuideLLM ("]
    assert "vs C: GuideLLM" in heads[1] and "B is " not in heads[1]
    assert heads[0].count("[95% CI") == 3 and heads[1].count("no detectable difference") == 3
    # the timeline: each run's requests at their send times since its own first one
    fig = timeline([("A", read_run(a).timed), ("B", read_run(b).timed)])
    xs = [list(t.x) for t in fig.data]
    assert len(xs) == 4 and all(min(x) == 0 and max(x) > 0.1 for x in xs)
    # ... and our own runs' requests too, whose stamps carry their clock's origin
    ours = [make_record("a", 100.0, 10.0, trial=i) for i in range(3)]
    for i, r in enumerate(ours):
        r.raw.t_send = 50.0 + i
        r.clock_origin = (1.7e9, 40.0)
    assert sorted(timeline([("ours", ours)]).data[0].x) == [0.0, 1.0, 2.0]

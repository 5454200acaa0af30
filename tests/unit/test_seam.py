"""compare, bench, claims and the board through the core/port seam, against a scripted server:
fast, deterministic runs of the real code paths (the real-server tests stay in integration/)."""

from __future__ import annotations

from pathlib import Path

import pytest

from playground.claims.board import run_board
from playground.claims.run import run_claim
from playground.core.compare import compare
from playground.errors import ValidationFailed
from playground.lab.bench import run_experiment
from playground.lab.store import read_run
from playground.lab.summary import summarize_run
from playground.outputs.board_view import BOARD_HEADERS, board_rows
from playground.settings import REPO_ROOT, Settings
from playground.specs.claims import load_claims
from playground.specs.experiments import experiment_from_dict
from playground.specs.presets import PresetLibrary
from tests.scripted import ScriptedPort

PRESETS = REPO_ROOT / "presets"
LIB = PresetLibrary(PRESETS)


def settings(tmp_path: Path, **kw: object) -> Settings:
    return Settings(base_url="http://scripted/v1", runs_dir=tmp_path / "runs", **kw)


async def test_compare_runs_every_variant_and_checks_the_model_first(tmp_path: Path) -> None:
    port = ScriptedPort()
    variants = [LIB.get("seed-default"), LIB.get("all-optimizations")]
    recs = await compare(settings(tmp_path), variants, "你好", port=port)
    seed, opt = (r.metrics() for r in recs)
    assert seed.ttft_ms is None and opt.ttft_ms is not None  # non-streaming: n/a
    assert opt.visible_wait_ms < seed.visible_wait_ms  # type: ignore[operator]
    with pytest.raises(ValidationFailed, match="not served"):
        await compare(settings(tmp_path, model="other"), variants, "你好", port=port)
    assert len(port.backend.calls) == 2  # nothing was sent for the unserved model
    too_long = ScriptedPort(max_model_len=64)
    with pytest.raises(ValidationFailed, match="max_tokens"):
        await compare(settings(tmp_path), variants, "你好", port=too_long)
    assert too_long.backend.calls == []


async def test_bench_writes_typed_records_and_calls_the_faster_variant(tmp_path: Path) -> None:
    exp = experiment_from_dict({"name": "s", "variants": [
        {"name": "whole", "stream": False, "max_tokens": 16, "ignore_eos": True},
        {"name": "stream", "stream": True, "max_tokens": 16, "ignore_eos": True}],
        "examples": 4, "repetitions": 2}, LIB, source="t")
    path = None
    async for ev in run_experiment(settings(tmp_path), exp, port=ScriptedPort()):
        path = ev.path or path
    assert path is not None
    run = read_run(path)
    assert len(run.timed) == 16 and len(run.requests) == 18  # + one warm-up per variant
    assert run.meta.floor_ms == 0.5 and run.meta.vllm_version == "scripted"
    # the server's series beside the requests, as typed lines of the same file
    assert [(s.running, s.waiting) for s in run.server] == [(1, 2), (1, 2)]
    summary = summarize_run(run)
    wait = next(c for c in summary.comparisons if c.metric == "visible_wait_ms")
    assert wait.call == "lower" and "stream is" in wait.verdict


async def test_a_claim_and_the_board_are_judged_end_to_end(tmp_path: Path) -> None:
    claims, _ = load_claims(PRESETS)
    result = None
    async for ev in run_claim(settings(tmp_path), claims["streaming"], LIB, port=ScriptedPort()):
        result = ev.result or result
    assert result is not None and result.status == "done"
    assert result.verdict == "confirmed" and result.n_failed == 0
    # the board says what the server's queue and KV cache reached while the claim ran
    assert result.summary is not None and result.summary["server"]["peak_waiting"] == 2
    row = board_rows({"claims": [result.as_dict()]})[0]
    assert row[BOARD_HEADERS.index("ran on")].endswith("; server peak 2 waiting, KV cache 10%")
    board = {}
    async for ev in run_board(settings(tmp_path), [claims["streaming"], claims["eager"]], LIB,
                              api_checks=False, port=ScriptedPort()):
        board = ev.board or board
    by_id = {c["id"]: c for c in board["claims"]}
    assert by_id["streaming"]["verdict"] == "confirmed"
    assert by_id["eager"]["status"] == "skipped"  # a server A/B without --with-servers
    assert board["environment"]["vllm_version"] == "scripted"

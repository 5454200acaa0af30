"""Physical floor, phase breakdown, goodput, TTFT definitions and the grid (pure)."""

from __future__ import annotations

import pytest

from playground.core.metrics import RawTimings, Usage, residual_ms
from playground.core.phases import breakdown
from playground.core.record import RequestRecord, ScoreInfo
from playground.core.request import ChatRequest
from playground.core.results import GridCell
from playground.core.runner import Recording
from playground.core.scoring import thinking_cut_off
from playground.lab.insight import definitions, goodput, grid
from playground.lab.summary import server_share
from playground.outputs.html import phase_bar
from playground.outputs.tables import grid_rows
from playground.server.floor import (
    GPU_BANDWIDTH,
    QWEN3_0_6B,
    floor_for,
    gpu_bandwidth,
    param_count,
    weight_bytes,
)
from playground.ui.render import server_share as server_line
from tests.records import make_record


def test_qwen3_0_6b_bf16_on_h200_by_hand() -> None:
    # hand count: embedding 151936*1024 = 155,582,464 (tied lm_head: counted once);
    # per layer: q 1024*2048 + k,v 2*1024*1024 + o 2048*1024 = 6,291,456; MLP 3*1024*3072 =
    # 9,437,184; norms 2*1024 + 2*128 = 2,304 -> 15,730,944 x 28 = 440,466,432; final norm 1024
    assert param_count(QWEN3_0_6B) == 155_582_464 + 440_466_432 + 1024 == 596_049_920
    assert weight_bytes(QWEN3_0_6B) == pytest.approx(1.192e9, rel=1e-3)  # "about 1.19 GB"
    f = floor_for(QWEN3_0_6B, GPU_BANDWIDTH["H200"], "H200")
    assert f.ms_per_token == pytest.approx(0.2483, rel=1e-3)  # "about 0.25 ms per step"
    assert f.times_above(2.483) == pytest.approx(10.0, rel=1e-3)
    assert "0.248 ms/token" in f.describe()


def test_untied_head_and_dtype_change_the_bytes() -> None:
    untied = {**QWEN3_0_6B, "tie_word_embeddings": False}
    assert param_count(untied) - param_count(QWEN3_0_6B) == 151936 * 1024
    assert weight_bytes(QWEN3_0_6B, "float32") == 2 * weight_bytes(QWEN3_0_6B)


@pytest.mark.parametrize(("name", "key"), [("NVIDIA H200", "H200"), ("NVIDIA H100 80GB HBM3",
                                           "H100"), ("NVIDIA GeForce RTX 4090", "RTX 4090"),
                                           ("NVIDIA A10", "A10"), ("NVIDIA L4", "L4")])
def test_known_gpus_by_marketing_name(name: str, key: str) -> None:
    known = gpu_bandwidth(name)
    assert known is not None and known[0] == GPU_BANDWIDTH[key]


def test_unknown_gpu_has_no_floor() -> None:
    assert gpu_bandwidth("Some Accelerator X") is None


def raw(**kw: object) -> RawTimings:
    base: dict[str, object] = {"streaming": True, "t_send": 0.0, "t_first_reasoning": None,
                               "t_first_content": 0.1, "t_last": 1.1, "server_metrics": None}
    base.update(kw)
    usage = base.pop("usage", {})
    return RawTimings(**base, usage=Usage(**usage))  # type: ignore[arg-type]


def test_phases_add_up_to_e2e_with_transport_as_the_residual() -> None:
    sm = {"queue_time_ms": 5.0, "time_to_first_token_ms": 40.0, "generation_time_ms": 900.0}
    b = breakdown(raw(server_metrics=sm, t_last=1.0))
    assert b is not None and b.source == "server per-request metrics"
    assert dict(b.parts) == {"queue": 5.0, "prefill": 40.0, "thinking": 0.0, "answer": 900.0,
                             "transport + client": 55.0}
    assert b.total() == pytest.approx(1000.0) and b.residual_ms == 55.0
    assert "prefill" in phase_bar(b)


def test_every_view_shows_the_same_residual() -> None:
    """The column's server line, the phase bar and the run summary: one number (they used to
    disagree: e2e - queue - generation vs e2e - queue - prefill - decode)."""
    sm = {"queue_time_ms": 5.0, "time_to_first_token_ms": 40.0, "generation_time_ms": 900.0}
    r = make_record("a", 1000.0, 100.0, server=sm)
    b = r.phases()
    assert b is not None and b.residual_ms == pytest.approx(55.0)
    assert residual_ms(r.raw, r.metrics.e2e_ms) == pytest.approx(55.0)
    assert server_share([r]).rest_ms == pytest.approx(55.0)
    live = Recording(r.variant, ChatRequest("a", {"stream": True, "max_tokens": 8}), "u", r.raw,
                     status="done")
    assert "rest (HTTP, API server, transport, client) 55.0 ms" in server_line(live)


def test_thinking_share_of_decode_from_client_stamps() -> None:
    sm = {"queue_time_ms": 0.0, "time_to_first_token_ms": 50.0, "generation_time_ms": 1000.0}
    r = raw(t_first_reasoning=0.1, t_first_content=0.85, t_last=1.1, server_metrics=sm)
    b = breakdown(r)
    assert b is not None
    parts = dict(b.parts)
    assert parts["thinking"] == pytest.approx(750.0) and parts["answer"] == pytest.approx(250.0)
    never = breakdown(raw(t_first_reasoning=0.1, t_first_content=None, server_metrics=sm))
    assert never is not None and dict(never.parts)["answer"] == 0


def test_non_streaming_split_uses_reasoning_tokens_and_client_only_fallback() -> None:
    r = raw(streaming=False, t_last=0.4, usage={"reasoning_tokens": 30, "completion_tokens": 40})
    b = breakdown(r)
    assert b is not None and b.source == "client timestamps only"
    assert dict(b.parts) == {"thinking": pytest.approx(300.0), "answer": pytest.approx(100.0)}
    assert breakdown(raw(t_last=None)) is None


def rec(name: str, ttft: float | None, e2e: float, *, error: bool = False,
        thinking: bool = False, guided: bool = False, content: str = "{}",
        first_chunk: float | None = None, valid: bool = True) -> RequestRecord:
    schema = {"name": "s", "schema": {"type": "object"}} if guided else None
    r = make_record(name, e2e, ttft, error="x" if error else None, thinking=thinking,
                    guided_json=schema,
                    score=ScoreInfo(json_valid=valid, schema_valid=valid if guided else None))
    if not error:
        r.content = content
    if first_chunk is not None:
        r.raw.t_first_chunk = first_chunk / 1000
    return r


def test_goodput_counts_requests_meeting_every_objective() -> None:
    rows = [rec("a", 100, 900), rec("a", 300, 900), rec("a", 100, 2000), rec("a", 100, 900,
                                                                             error=True),
            rec("b", None, 800), rec("b", None, 1200)]  # b is non-streaming: wait = E2E
    assert goodput(rows, 200, 1000) == {"a": 25.0, "b": 0.0}
    assert goodput(rows, None, 1000) == {"a": 50.0, "b": 50.0}
    assert goodput(rows, None, None) == {"a": 75.0, "b": 100.0}


def test_three_ttft_definitions_side_by_side() -> None:
    rows = [rec("a", 50, 500, first_chunk=20), rec("a", 70, 500, first_chunk=40)]
    assert definitions(rows)["a"] == pytest.approx(
        {"first_chunk_ms": 30.0, "ttft_ms": 60.0, "ttfa_ms": 60.0})


def test_grid_cells_validity_overhead_and_cut_off_thinking() -> None:
    rows = [rec("free", 50, 900, valid=False), rec("guided", 50, 500, guided=True),
            rec("t-free", 80, 3000, thinking=True, content="", valid=False),
            rec("t-guided", 80, 3000, thinking=True, guided=True, content="<think> x",
                valid=False)]
    cells = {(c["thinking"], c["guided_json"]): c for c in grid(rows)}
    assert len(cells) == 4
    assert cells[(False, True)]["schema_valid_pct"] == 100
    overhead = rows[1].metrics.tpot_ms - rows[0].metrics.tpot_ms  # type: ignore[operator]
    assert cells[(False, True)]["guided_overhead_tpot_ms"] == pytest.approx(overhead)
    assert cells[(True, False)]["cut_off"] == 1 and cells[(True, True)]["cut_off"] == 1
    assert not thinking_cut_off(False, rows[0].content)


def test_guided_overhead_is_not_applicable_where_the_grammar_never_applied() -> None:
    """vLLM applies the grammar once reasoning ends: a cell whose thinking was cut off every
    time never ran it, so its TPOT says nothing about guided decoding."""
    rows = [rec("t-free", 80, 3000, thinking=True, content="fine"),
            rec("t-guided", 80, 2000, thinking=True, guided=True, content="<think> x",
                valid=False),
            rec("free", 50, 900), rec("guided", 50, 500, guided=True)]
    cells = {(c["thinking"], c["guided_json"]): c for c in grid(rows)}
    cut = cells[(True, True)]
    assert cut["guided_overhead_tpot_ms"] is None
    assert cut["guided_overhead_note"] == "not applicable (grammar never applied: thinking cut off)"
    assert cells[(False, True)]["guided_overhead_tpot_ms"] is not None  # applied: measured
    shown = {(r[0], r[1]): r[9] for r in grid_rows([GridCell(**c) for c in cells.values()])}
    assert shown[("on", "on")].startswith("not applicable") and "ms/token" in shown[("off", "on")]

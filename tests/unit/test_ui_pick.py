"""benchmarks/ui_pick: which requests it counts as hand-overs, and its comparison on made-up
rows: picks only (the idle windows are the floor, never compared), B against A, per pick."""

from __future__ import annotations

import json

from tests.benchmod import load


def body(*data: object) -> str:
    return json.dumps({"data": list(data), "fn_index": 3, "session_hash": "x"})


def test_a_hand_over_is_a_request_whose_first_value_is_the_pages_token_and_number() -> None:
    m = load("ui_pick")
    assert m.handover(body("Kq3_-z9:12", None, "http://127.0.0.1:8000/v1"))
    assert not m.handover(body("fixed-64-stream"))  # a preset's own event
    assert not m.handover(body("http://127.0.0.1:8000/v1", "Qwen/Qwen3-0.6B"))  # View code
    assert not m.handover(body())
    assert not m.handover("not json")
    assert not m.handover(None)


def test_picks_are_compared_b_against_a_and_idle_windows_are_only_the_floor() -> None:
    m = load("ui_pick")
    rows = []
    for k in range(8):
        for arm, busy, handovers in (("A", 2000 + k, 8), ("B", 1000 + k, 1)):
            rows.append({"arm": arm, "what": "pick", "busy_ms": busy, "settled_ms": busy / 2,
                         "handovers": handovers})
            rows.append({"arm": arm, "what": "idle", "busy_ms": 50.0 + k, "settled_ms": 0.0,
                         "handovers": 0})
    out = {r["measure"]: r for r in m.compare(rows)}
    busy = out["busy_ms"]
    assert busy["n"] == [8, 8]  # the idle windows are not picks
    assert busy["A"] == 2003.5 and busy["B"] == 1003.5
    assert abs(busy["B/A"] - 1003.5 / 2003.5) < 1e-9
    assert busy["call"] == "lower" and busy["interval"][1] < 1
    assert "handovers" not in out  # counted, not tested
    assert out["hand-overs per pick, arm A"]["A"] == 8
    assert out["hand-overs per pick, arm B"]["range"] == [1, 1]
    assert out["floor: busy_ms of an idle window, arm A"]["A"] == 53.5
    assert out["floor: busy_ms of an idle window, arm B"]["n"] == 8

"""benchmarks/ui_fidelity_ab: two arms of ui_fidelity runs compared with lab/calls, on made-up
run summaries (so the right verdict is known), and the app command of an experiment's arm."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from playground.settings import REPO_ROOT
from tests.benchmod import load


def summary(ttfa_ratio: float, headers: float, c2t: float) -> dict:
    """The parts of a ui_fidelity summary.json that the A/B reads."""
    return {
        "ui_vs_headless": {"ttfa_ms": {"ratio": ttfa_ratio}},
        "where_the_wait_goes": {"live": {"headers_p50_ms": headers, "ttfa_p50_ms": 80.0},
                                "headless": {"headers_p50_ms": 30.0, "ttfa_p50_ms": 60.0},
                                "plain": {"ttfa_p50_ms": 61.0}},
        "rows": [{"row": "playground, live vLLM", "first_lag_p50_ms": c2t,
                  "first_lag_p90_ms": 3 * c2t, "lag_p50_ms": 20.0}],
    }


def by_name(result: list[dict]) -> dict[str, dict]:
    return {r["measure"]: r for r in result}


def test_a_clear_change_is_called_in_its_direction_and_noise_is_not() -> None:
    ab = load("ui_fidelity_ab")
    a = [summary(1.8 + 0.01 * i, 60.0 + i, 80.0 + i) for i in range(8)]
    b = [summary(1.0 + 0.01 * i, 31.0 + i, 80.5 + i) for i in range(8)]
    got = by_name(ab.compare(a, b))
    ttfa = got["Playground TTFA / headless"]
    assert ttfa["verdict"] == "B lower", ttfa
    assert ttfa["b_over_a"] < 0.6 and ttfa["b_over_a_ci"][1] < 1, ttfa
    assert got["Playground sent -> headers / headless"]["verdict"] == "B lower"
    # interleaved values (80..85 vs 80.5..85.5): nothing to call
    assert got["click -> text - TTFA, p50 (ms)"]["verdict"] == \
        "no difference resolved at this n"
    # the same numbers in both arms: never a call, and the ratio is 1
    same = by_name(ab.compare(a, a))
    assert {r["verdict"] for r in same.values()} <= {"no difference resolved at this n",
                                                     "not measurable", "context, not tested"}
    assert abs(same["Playground TTFA / headless"]["b_over_a"] - 1) < 1e-9
    # higher goes the other way
    assert by_name(ab.compare(b, a))["Playground TTFA / headless"]["verdict"] == "B higher"


def test_too_few_runs_say_so_instead_of_no_difference() -> None:
    ab = load("ui_fidelity_ab")
    a = [summary(1.8, 60.0, 80.0), summary(1.9, 61.0, 81.0)]
    b = [summary(1.0, 31.0, 40.0), summary(1.1, 32.0, 41.0)]
    verdict = by_name(ab.compare(a, b))["Playground TTFA / headless"]["verdict"]
    assert verdict.startswith("too few samples (n=2 vs 2") and "at least" in verdict, verdict
    # 6 runs per arm, completely apart: one measure alone could be called, the family cannot
    a = [summary(1.8 + 0.01 * i, 60.0 + i, 80.0 + i) for i in range(6)]
    b = [summary(1.0 + 0.01 * i, 31.0 + i, 40.0 + i) for i in range(6)]
    got = by_name(ab.compare(a, b))
    verdict = got["Playground TTFA / headless"]["verdict"]
    assert verdict.startswith("cannot be called at this n: 6 vs 6 runs"), verdict
    assert got["headless TTFA (ms)"]["verdict"] == "context, not tested"


def test_an_arm_with_a_switch_interval_starts_the_app_with_it() -> None:
    fid = load("ui_fidelity")
    assert fid.app_command(None) == [sys.executable, str(REPO_ROOT / "app.py")]
    cmd = fid.app_command(0.5)
    assert cmd[:2] == [sys.executable, "-c"]
    # the prelude runs, then app.py as __main__: stand in app.py's launch with a print
    probe = cmd[2].replace("runpy.run_path", "print(sys.getswitchinterval(), sys.argv[0]) or "
                                             "(lambda *a, **k: None)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out == ["0.0005", str(REPO_ROOT / "app.py")]


def test_a_pinned_browser_is_a_wrapper_that_holds_every_process_to_those_cpus(
        tmp_path: Path) -> None:
    fid = load("ui_fidelity")
    assert fid.chromium(None, tmp_path) == "/usr/bin/chromium"
    wrapper = Path(fid.chromium("1", tmp_path))
    text = wrapper.read_text()
    assert 'exec taskset -c 1 /usr/bin/chromium "$@"' in text and wrapper.stat().st_mode & 0o100


def test_rows_rotate_their_place_in_the_round_and_are_summarised_by_it() -> None:
    fid = load("ui_fidelity")
    # every row takes every place, once per three rounds
    for row in ("plain", "live", "headless"):
        assert sorted(order.index(row) for order in fid.ORDERS) == [0, 1, 2]
    rs = [{"position": 0, "ttfa_ms": 40.0, "headers_ms": 20.0},
          {"position": 0, "ttfa_ms": 50.0, "headers_ms": None},
          {"position": 2, "ttfa_ms": 90.0, "headers_ms": 60.0}]
    got = fid.by_position(rs)
    assert set(got) == {"0", "2"}
    assert got["0"]["n"] == 2 and got["0"]["headers_p50_ms"] == 20.0
    assert got["2"] == {"n": 1, "ttfa_p50_ms": 90.0, "headers_p50_ms": 60.0}


def test_the_click_split_rotates_its_ways_and_judges_each_against_headless() -> None:
    split = load("ui_click_split")
    orders = split.orders()
    for way in split.WAYS:  # every way takes every place once per len(WAYS) rounds
        assert sorted(o.index(way) for o in orders) == list(range(len(split.WAYS)))
    rows = [{"way": w, "ttfa_ms": base * f, "headers_ms": base / 2 * f}
            for w, f in (("click", 1.5), ("click-now", 2.0), ("jsclick", 1.2), ("post", 1.0),
                         ("headless", 1.0))
            for base in (38.0, 39.0, 40.0, 41.0, 42.0, 43.0, 44.0, 45.0)]
    got = split.summarise(rows)
    assert got["headless"]["n"] == 8 and "ttfa_vs_headless" not in got["headless"]
    assert got["click"]["ttfa_vs_headless"]["ratio"] > 1.4
    assert got["click"]["ttfa_vs_headless"]["verdict"] == "outside 5%"
    assert got["post"]["ttfa_vs_headless"]["ratio"] == 1.0
    assert got["post"]["headers_p50_ms"] == got["headless"]["headers_p50_ms"]
    # the shipped page (its request after the click's frame) against the page before, directly
    assert got["click"]["ttfa_vs_click_now"]["ratio"] == 0.75
    assert got["click"]["ttfa_vs_click_now"]["ratio_ci"][1] < 1

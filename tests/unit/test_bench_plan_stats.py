from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from playground.errors import PresetError
from playground.lab.calls import call, compare
from playground.lab.plan import plan
from playground.lab.store import Run, RunMeta
from playground.lab.summary import summarize_run, verdict_text, write_outputs
from playground.settings import REPO_ROOT
from playground.specs.experiments import experiment_from_dict, load_experiment
from playground.specs.presets import PresetLibrary
from tests.records import make_record

LIB = PresetLibrary(REPO_ROOT / "presets")


def test_shipped_experiments_load() -> None:
    paths = sorted((REPO_ROOT / "presets" / "experiments").glob("*.yaml"))
    assert paths
    for p in paths:
        exp = load_experiment(p, LIB)
        assert exp.baseline_name in [v.name for v in exp.variants]
        assert exp.cache == "cold"


@pytest.mark.parametrize(("data", "field", "fragment"), [
    ({"name": "x", "variants": ["nope"]}, "variants.0", "unknown preset"),
    ({"name": "x", "variants": ["streaming"], "baseline": "greedy"}, "(file)", "baseline"),
    ({"name": "x", "variants": ["streaming"], "repetitions": 0}, "repetitions",
     "greater than or equal to 1"),
    ({"name": "x", "variants": ["streaming"], "order": "zigzag"}, "order", "interleaved"),
    ({"name": "x", "variants": ["streaming"], "cache": "lukewarm"}, "cache", "cold"),
    ({"name": "x", "variants": ["streaming"], "dataset": "../../etc"}, "dataset", "plain name"),
    ({"name": "x", "variants": ["streaming"], "reps": 3}, "reps", "unknown key"),
    ({"name": "x", "variants": [{"name": "a", "prompt": "nope"}]}, "variants.0.prompt",
     "unknown prompt"),
    ({"name": "x", "variants": ["streaming", "streaming"]}, "(file)", "unique"),
])
def test_bad_experiment_names_field(data: dict, field: str, fragment: str) -> None:
    with pytest.raises(PresetError) as exc:
        experiment_from_dict(data, LIB, source="e.yaml")
    assert exc.value.field == field
    assert fragment in str(exc.value)


def exp(**kw: object):
    base: dict[str, object] = {"name": "e", "variants": ["seed-default", "streaming",
                                                         "greedy"]}
    base.update(kw)
    return experiment_from_dict(base, LIB, source="t")


def test_plan_interleaves_with_rotation_and_warmup_first() -> None:
    trials = plan(exp(repetitions=2, warmup=1), 3, "r")
    warm = [t for t in trials if t.phase == "warmup"]
    timed = [t for t in trials if t.phase == "timed"]
    assert [t.variant for t in warm] == ["seed-default", "streaming", "greedy"]
    assert trials[:3] == warm
    assert len(timed) == 2 * 3 * 3
    firsts = [timed[i].variant for i in range(0, len(timed), 3)]
    assert len(set(firsts)) == 3  # no variant always goes first
    for i in range(0, len(timed), 3):  # each block of 3 = all variants, one example
        block = timed[i:i + 3]
        assert {t.variant for t in block} == {"seed-default", "streaming", "greedy"}
        assert len({t.example for t in block}) == 1
    assert [t.index for t in trials] == list(range(len(trials)))


def test_cold_cache_nonces_are_unique_and_warm_has_none() -> None:
    nonces = [t.nonce for t in plan(exp(repetitions=3), 4, "run1")]
    assert None not in nonces and len(set(nonces)) == len(nonces)
    assert all(t.nonce is None for t in plan(exp(cache="warm"), 4, "r"))


def test_random_order_is_a_seeded_permutation() -> None:
    a = plan(exp(order="random", seed=3, repetitions=2), 4, "r")
    b = plan(exp(order="random", seed=3, repetitions=2), 4, "r")
    inter = plan(exp(repetitions=2), 4, "r")
    assert [(t.variant, t.example) for t in a] == [(t.variant, t.example) for t in b]
    assert sorted((t.variant, t.example, t.repetition) for t in a) == sorted(
        (t.variant, t.example, t.repetition) for t in inter)
    assert [t.variant for t in a] != [t.variant for t in inter]


def verdict(base: list[float], other: list[float], names: tuple[str, str]) -> str:
    e = compare(base, other)
    return verdict_text("E2E", names, e, call(e))


def test_verdicts_clear_win_loss_and_noise() -> None:
    rng = random.Random(1)
    base = [1000 + rng.gauss(0, 20) for _ in range(30)]
    fast = [600 + rng.gauss(0, 20) for _ in range(30)]
    same = [1000 + rng.gauss(0, 20) for _ in range(30)]
    win = compare(base, fast)
    assert win.diff_ci is not None and win.diff_ci[1] < 0 and call(win) == "lower"
    text = verdict(base, fast, ("A", "B"))
    assert "B is" in text and "faster" in text
    assert win.ratio is not None and 1.5 < win.ratio < 1.8
    assert "slower" in verdict(fast, base, ("B", "A"))
    noise = compare(base, same)
    assert "no detectable difference" in verdict(base, same, ("A", "C"))
    assert noise.diff_ci is not None and noise.diff_ci[0] <= 0 <= noise.diff_ci[1]
    assert "not enough data" in verdict([1.0], [2.0], ("A", "B"))


def test_a_verdict_without_a_call_names_its_pair_and_what_a_call_needs() -> None:
    few = verdict([100.0, 101, 102, 103], [50.0, 51, 52, 53], ("seed", "fast"))
    assert few.startswith("E2E, fast vs seed: too few samples (n=4 vs 4")
    assert "a call needs at least 5 per side" in few  # min p at 4 vs 4 is 0.057 > 0.05
    assert verdict([1.0], [2.0], ("seed", "fast")).startswith("E2E, fast vs seed: not enough")


SERVER = {"queue_time_ms": 1.0, "time_to_first_token_ms": 4.0}


def test_report_files_are_consistent(tmp_path: Path) -> None:
    exp = experiment_from_dict({"name": "t", "variants": [{"name": "a"}, {"name": "b"}],
                                "baseline": "a"}, LIB, source="t")
    run = Run(meta=RunMeta(experiment=exp))
    for i in range(10):  # queue 1 + prefill 4 + decode (e2e - 15): the residual is 10 ms
        run.add(make_record("a", 1000 + i, None, trial=i,
                            server={**SERVER, "generation_time_ms": 1000 + i - 15}))
    for i in range(10):
        run.add(make_record("b", 900 + i, 50 + i, trial=10 + i))
    run.add(make_record("b", 0, None, error="boom", trial=99))
    run.add(make_record("a", 5, None, phase="warmup", trial=100))
    paths = write_outputs(run, tmp_path)
    with paths["csv"].open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 21  # timed requests only, failures included
    s = summarize_run(run)
    assert s.n_failed == 1 and s.variants["b"].failed == 1
    assert s.variants["a"].server.rest_ms == pytest.approx(10.0)
    for v in s.variants.values():
        m = v.metrics["e2e_ms"]
        assert m.median_ci is not None and m.p50 is not None
        lo, hi = m.median_ci
        assert lo <= m.p50 <= hi
    # results.json: the published format, read back typed to the same summary
    from playground.core.results import RESULTS_FORMAT, load_results
    back = load_results(paths["json"])
    assert back.format == RESULTS_FORMAT and len(back.requests) == 21
    assert back.summary.model_dump() == s.model_dump()
    html = paths["html"].read_text()
    assert "Plotly" in html and "<script src=" not in html  # inlined, works offline
    cdn = write_outputs(run, tmp_path / "cdn", plotlyjs="cdn")["html"].read_text()
    assert '<script src="https://cdn.plot.ly/plotly-' in cdn and len(cdn) < len(html) / 10


def test_bench_text_says_none_set_without_an_slo() -> None:
    """Was "goodput (TTFT<=None, E2E<=None ms)"."""
    from playground.cli.bench import report_text

    run = Run(requests=[make_record("a", 100 + i, 10, trial=i) for i in range(3)])
    text = report_text(run)
    assert "None" not in text and "goodput (none set)" in text
    assert "TTFT <= 200 ms" in report_text(run, ttft_slo_ms=200)


def test_one_prompt_limit_for_the_cli_and_the_ui() -> None:
    """There were two (20,000 in the UI, 200,000 in preflight)."""
    from playground.core import preflight
    from playground.settings import Settings
    from playground.ui.blocks import build_ui
    from playground.ui.context import UIContext

    ctx = UIContext.create(Settings())
    try:
        demo = build_ui(ctx)
        boxes = [b for b in demo.blocks.values() if getattr(b, "label", None) == "prompt"]
        assert [b.max_length for b in boxes] == [preflight.MAX_PROMPT_CHARS]
    finally:
        ctx.measure.stop()


def test_streamed_replies_that_arrived_at_once_are_counted_and_said() -> None:
    """A reply whose first token came with its last (TTFT = E2E: the server did not stream)
    is counted per variant, and every view warns; a streamed reply that arrived token by token,
    a short one and a non-streamed one are not counted."""
    from playground.outputs.fmt import at_once_text

    streamed = [make_record("a", 270, 7, tokens=64, trial=0),  # 7 ms, then 263 ms of tokens
                make_record("a", 270, 268, tokens=64, trial=1),  # all 64 within 2 ms
                make_record("a", 20, 19.5, tokens=4, trial=2),  # too short to tell
                make_record("b", 270, trial=3)]  # not streamed
    summary = summarize_run(Run(requests=streamed))
    assert summary.variants["a"].at_once == 1 and summary.variants["b"].at_once == 0
    (warning,) = at_once_text(summary)
    assert warning.startswith("a: 1 of 3 streamed replies arrived at once")
    assert warning.endswith("their TTFT is their E2E")

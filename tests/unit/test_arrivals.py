"""Arrival profiles (lab/arrivals): vllm bench serve's definitions, seeded."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from playground.lab.arrivals import Rate, parse_rates, schedule


def test_every_profile_ends_at_n_over_the_rate_and_never_goes_back() -> None:
    for rate in (Rate(kind="constant", per_s=4), Rate(per_s=4),
                 Rate(kind="gamma", per_s=4, burstiness=0.25)):
        due = schedule(rate, 200, seed=3)
        assert len(due) == 200 and due == sorted(due) and due[0] > 0
        assert due[-1] == pytest.approx(50.0)  # vllm's normalisation: N / R exactly
    assert schedule(Rate(kind="constant", per_s=4), 4) == [0.25, 0.5, 0.75, 1.0]
    assert schedule(Rate(per_s=math.inf), 3) == [0.0, 0.0, 0.0]
    assert schedule(Rate(per_s=4), 0) == []


def test_the_same_seed_gives_the_same_schedule_and_burstiness_spreads_the_gaps() -> None:
    assert schedule(Rate(per_s=10), 50, seed=1) == schedule(Rate(per_s=10), 50, seed=1)
    assert schedule(Rate(per_s=10), 50, seed=1) != schedule(Rate(per_s=10), 50, seed=2)

    def cv(rate: Rate) -> float:  # coefficient of variation of the gaps
        due = schedule(rate, 4000, seed=0)
        gaps = [b - a for a, b in zip([0.0, *due], due, strict=False)]
        return statistics.pstdev(gaps) / statistics.fmean(gaps)

    # a gamma gap with shape B has CV 1/sqrt(B): Poisson 1, B=0.25 -> 2, B=4 -> 0.5
    assert cv(Rate(per_s=10)) == pytest.approx(1.0, abs=0.08)
    assert cv(Rate(kind="gamma", per_s=10, burstiness=0.25)) == pytest.approx(2.0, abs=0.2)
    assert cv(Rate(kind="gamma", per_s=10, burstiness=4)) == pytest.approx(0.5, abs=0.05)
    assert cv(Rate(kind="constant", per_s=10)) == pytest.approx(0.0, abs=1e-9)


def test_bad_rates_are_named() -> None:
    assert [r.per_s for r in parse_rates("1, 5,20,inf")] == [1, 5, 20, math.inf]
    with pytest.raises(ValueError, match="'fast' is not a rate"):
        parse_rates("1,fast")
    with pytest.raises(ValueError, match="above 0"):
        parse_rates("0")
    with pytest.raises(ValueError, match="burstiness is the gamma profile's"):
        Rate(kind="poisson", per_s=1, burstiness=2)


def test_a_rate_sweep_stops_when_throughput_stalls_while_queueing_grows() -> None:
    from playground.core.results import ServerSummary
    from playground.core.sweep_doc import SweepLevel
    from playground.lab.sweep import saturated, summarise

    def level(req_s: float | None, ttft_due: float | None, waiting: float | None = None
              ) -> SweepLevel:
        server = None if waiting is None else ServerSummary(samples=1, gaps=0,
                                                            peak_waiting=waiting)
        return SweepLevel(n=8, failed=0, req_per_s=req_s, ttft_from_due_p50_ms=ttft_due,
                          server=server)

    assert saturated(level(10, 50), level(19, 60)) == ""  # still rising
    assert saturated(level(10, 50), level(10.2, 70)) == ""  # flat, but no queue growth yet
    why = saturated(level(10, 50), level(10.2, 400))
    assert why.startswith("saturated: throughput 10.00 -> 10.20 req/s") and "50 -> 400" in why
    assert saturated(level(10, 50), level(None, None)) == ""  # closed-loop levels: no rule
    queued = saturated(level(10, 50, waiting=0), level(10.1, 60, waiting=12))
    assert "waiting queue grew 0 -> 12" in queued and "TTFT" not in queued

    def row(ttft: float, delay: float | None) -> dict:
        return {"ok": True, "ttft": ttft, "tpot": 1.0, "e2e": ttft + 10, "itl": [1.0],
                "output_tokens": 2, "send_delay": delay,
                "ttft_from_due": None if delay is None else ttft + delay,
                "e2e_from_due": None if delay is None else ttft + 10 + delay}

    closed = summarise([row(100, None)] * 4, [1.0])
    assert "send_delay_p50_ms" not in closed and "client_bound" not in closed
    assert summarise([row(100, 2.0)] * 4, [1.0])["client_bound"] is False
    slow = summarise([row(100, 30.0)] * 4, [1.0])  # the client: 30% of TTFT late
    assert slow["client_bound"] is True and slow["ttft_from_due_p50_ms"] == 130


def _level(**kw: Any) -> Any:
    from playground.core.sweep_doc import SweepLevel

    return SweepLevel(**{"n": 8, "failed": 0, "ttft_p50_ms": 20.0, "ttft_p99_ms": 40.0,
                         "tpot_p50_ms": 5.0, "tpot_p99_ms": 9.0, **kw})


def test_the_sweep_report_draws_the_pareto_view_with_the_hand_off_and_the_send_delay() -> None:
    from playground.core.sweep_doc import SweepDoc
    from playground.outputs import html
    from playground.outputs.sweep_figure import sweep_figure

    doc = SweepDoc(model="m", base_url="u", vllm="0.32", output_len=8, date="d",
                   machine={"cpu": "x86", "cores": 2}, engine="auto", levels=[
                       _level(concurrency=8, engine="playground", req_per_s=10.0, workers=2,
                              nodes={"a": 4, "b": 4}),
                       _level(concurrency=128, engine="vllm-bench", req_per_s=30.0),
                       _level(concurrency=512, engine="vllm-bench", req_per_s=None)])
    fig = sweep_figure(doc)
    assert fig is not None
    names = [t.name for t in fig.data]
    assert names == ["TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"]
    ttft50 = fig.data[0]
    # one point per level with a throughput, joined in level order, labelled with its level
    assert list(ttft50.x) == [10.0, 30.0] and list(ttft50.text) == ["c8", "c128"]
    assert list(ttft50.marker.symbol) == ["circle", "diamond"]  # who measured it
    notes = [a.text for a in fig.layout.annotations]
    assert "hand-off to vllm bench serve (c128)" in notes
    page = html.sweep(doc, plotlyjs="cdn")
    assert "hand-off to vllm bench serve (c128)" in page and "2 (2)" in page  # readers (nodes)
    # open loop: a marker grows with the client's send delay, ringed when it was the bottleneck
    rates = doc.model_copy(update={"levels": [
        _level(rate_per_s=5, req_per_s=5.0, send_delay_p50_ms=0.2, send_delay_p99_ms=0.5),
        _level(rate_per_s=50, req_per_s=40.0, send_delay_p50_ms=30.0, send_delay_p99_ms=90.0,
               client_bound=True)]})
    fig = sweep_figure(rates)
    assert fig is not None
    m = fig.data[0].marker
    assert list(fig.data[0].text) == ["5 req/s", "50 req/s"]
    assert m.size[1] > m.size[0] and list(m.line.width) == [0, 3]
    assert not fig.layout.annotations or all("hand-off" not in a.text
                                             for a in fig.layout.annotations)
    assert "client-bound" in html.sweep(rates, plotlyjs="cdn")
    assert sweep_figure(doc.model_copy(update={"levels": [
        _level(concurrency=1, req_per_s=None)]})) is None


def test_experiments_and_background_take_a_rate_with_vllm_benchs_flags() -> None:
    from playground.errors import PresetError
    from playground.lab.engine import BenchServe
    from playground.lab.store import BackgroundRecord
    from playground.settings import REPO_ROOT
    from playground.specs.experiments import experiment_from_dict
    from playground.specs.presets import PresetLibrary

    lib = PresetLibrary(REPO_ROOT / "presets")
    base = {"name": "t", "variants": [{"name": "a"}]}
    exp = experiment_from_dict({**base, "rate": {"per_s": 5}}, lib, source="t")
    assert exp.rate == Rate(per_s=5) and exp.cap is None  # no cap unless concurrency is given
    assert experiment_from_dict({**base, "rate": {"per_s": 5}, "concurrency": 4}, lib,
                                source="t").cap == 4
    for bad, words in (({"rate": {"per_s": 5}, "workers": 2}, "one process"),
                       ({"background_rate": {"per_s": 5}}, "give background"),
                       ({"background_rate": {"kind": "constant", "per_s": 5}, "background": 2,
                         "background_engine": "vllm-bench"}, "no constant arrivals"),
                       ({"rate": {"kind": "poisson", "per_s": 5, "burstiness": 2}},
                        "burstiness")):
        with pytest.raises(PresetError) as e:
            experiment_from_dict({**base, **bad}, lib, source="t")
        assert words in str(e.value)
    spec = BenchServe("http://h/v1", "m", "m", 4, Path("d"), 8)
    assert spec.args()[spec.args().index("--request-rate") + 1] == "inf"
    rated = BenchServe("http://h/v1", "m", "m", 4, Path("d"), 8,
                       rate=Rate(kind="gamma", per_s=2.5, burstiness=0.5), seed=7).args()
    i = rated.index("--request-rate")
    assert rated[i:i + 6] == ["--request-rate", "2.5", "--burstiness", "0.5", "--seed", "7"]
    rec = BackgroundRecord(requests_in_flight=3, completed=4, failed=0, max_tokens=256,
                           rate="poisson 5/s")
    assert rec.describe().startswith("background requests arriving at poisson 5/s (at most 3")

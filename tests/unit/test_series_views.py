"""The server's series where the requests are: the Benchmark tab's SVG (no plotly) on the
requests' time axis, and a sweep's series read back level by level and drawn beside each
level's TTFT in its report."""

from __future__ import annotations

import json
import re

import pytest

from playground.core.record import RequestRecord
from playground.server.gpu import GpuSample
from playground.server.series import Series, ServerSample, read_levels
from tests.records import make_record


def at(t: float, running: float, waiting: float, kv: float | None = 0.5) -> ServerSample:
    return ServerSample(t=t, running=running, waiting=waiting, kv_usage=kv, prefix_queries=0,
                        prefix_hits=0, preemptions=0, prompt_tokens=0, generation_tokens=0)


def sent_at(r: RequestRecord, t: float) -> RequestRecord:
    raw = r.raw
    raw.t_send, raw.t_last = t, t + (raw.t_last or 0.0)
    raw.t_first_chunk = raw.t_first_content = t + (raw.t_first_content or 0.0)
    raw.token_times = [t + x for x in raw.token_times]
    r.clock_origin = (4900.0, 0.0)  # the series' clock (wall - monotonic = 4900 s)
    return r


def points(svg: str, cls: str) -> list[tuple[float, float]]:
    found = re.search(rf'<polyline class="{cls}" points="([^"]+)"', svg)
    assert found, f"no {cls} line in {svg[:300]}"
    return [tuple(map(float, p.split(","))) for p in found.group(1).split()]  # type: ignore[misc]


def test_the_benchmark_tab_draws_the_series_on_the_requests_time_axis() -> None:
    from playground.outputs.series_svg import BOTTOM_PANEL, series_svg

    series = Series(samples=[at(100.0, 1, 0), at(101.0, 4, 40), at(102.0, 2, 0, None)],
                    gpu=[GpuSample(t=101.0, gpu=0, util_pct=90, mem_used_mib=1, power_w=None,
                                   sm_clock_mhz=None)], clock_origin=(5000.0, 100.0))
    early = sent_at(make_record("a", 900, 100), 100.0)
    late = sent_at(make_record("b", 900, 700), 101.0)
    far = make_record("b", 100, 40)
    far.clock_origin = (1.7e9, 5.0)  # another machine's clock
    svg = series_svg(series, [early, late, far])
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    # the requests: one group per variant, each dot at its send time, higher when it waited more
    dots = {v: re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', g) for v, g in re.findall(
        r'<g class="requests" data-variant="(\w+)"[^>]*>(.*?)</g>', svg)}
    assert set(dots) == {"a", "b"} and len(dots["a"]) == len(dots["b"]) == 1
    (xa, ya), (xb, yb) = dots["a"][0], dots["b"][0]
    assert float(xa) < float(xb) and float(yb) < float(ya)  # b later, and waited longer
    running, waiting = points(svg, "running"), points(svg, "waiting")
    # steps at the samples' times, on the same axis as the requests
    assert running[0][0] == float(xa) and waiting[2][0] == float(xb)
    assert min(y for _, y in waiting) < BOTTOM_PANEL[1] - 50  # the 40 waiting rose
    assert points(svg, "kv")  # KV usage where the server reported it
    assert 'class="gpu gpu-0"' in svg and "GPU 0 utilisation %" in svg
    assert "1 rows on another clock are not drawn" in svg
    assert series_svg(Series(), [early]) == "" and series_svg(None, [early]) == ""
    noted = Series(samples=[at(1.0, 0, 0)], gpu_note="no GPU telemetry (no NVIDIA GPU visible)")
    assert "no GPU telemetry (no NVIDIA GPU visible)" in series_svg(noted, [])


def test_a_sweeps_series_is_read_back_level_by_level() -> None:
    lines = [json.dumps({"level": "c1", **at(1.0, 1, 0).model_dump()}),
             json.dumps({"level": "c1", **GpuSample(t=1.0, gpu=0, util_pct=50, mem_used_mib=1,
                                                    power_w=1, sm_clock_mhz=1).model_dump()}),
             "not json", json.dumps({"no": "level"}),
             json.dumps({"level": "c8", **at(2.0, 8, 3).model_dump()}),
             json.dumps({"level": "c8", **at(2.5, 8, 5).model_dump()})]
    levels = read_levels(lines)
    assert [name for name, _ in levels] == ["c1", "c8"]  # in the order they ran
    c1, c8 = (s for _, s in levels)
    assert len(c1.samples) == 1 and len(c1.gpu) == 1 and not c8.gpu
    assert [s.waiting for s in c8.samples] == [3, 5]


def test_the_sweep_report_draws_each_levels_series_beside_its_ttft() -> None:
    from playground.core.sweep_doc import SweepDoc
    from playground.outputs import html
    from playground.outputs.series_figure import levels_figure

    doc = SweepDoc.model_validate({
        "base_url": "u", "model": "m", "date": "d", "machine": {}, "output_len": 8,
        "engine": "auto", "levels": [
            {"concurrency": 1, "ttft_p50_ms": 10.0, "ttft_p99_ms": 12.0, "n": 2, "failed": 0,
             "req_per_s": 1.0},
            {"concurrency": 8, "ttft_p50_ms": 80.0, "ttft_p99_ms": 95.0, "n": 16, "failed": 0,
             "req_per_s": 4.0}]})
    levels = [("c1", Series(samples=[at(10.0, 1, 0), at(12.0, 1, 0)])),
              ("c8", Series(samples=[at(13.0, 8, 2), at(15.0, 8, 6)],
                            gpu_note="no GPU telemetry (no NVIDIA GPU visible)"))]
    fig = levels_figure(levels, doc)
    assert fig is not None
    traces = fig.to_dict()["data"]
    ttft = [t for t in traces if t["name"] == "TTFT p50"]
    assert [t["y"] for t in ttft] == [[10.0, 10.0], [80.0, 80.0]]
    assert ttft[1]["x"] == [pytest.approx(3.0), pytest.approx(5.0)]  # on the sweep's clock
    waiting = [t for t in traces if t["name"] == "waiting (server)"]
    assert waiting[1]["y"] == [2, 6]
    assert [s["label"]["text"] for s in fig.to_dict()["layout"]["shapes"]] == ["c1", "c8"]
    page = html.sweep(doc, plotlyjs="cdn", series=levels)
    assert 'id="server-series"' in page and "no GPU telemetry (no NVIDIA GPU visible)" in page
    assert "No sample of the server" in html.sweep(doc, plotlyjs="cdn")
    assert levels_figure([("c1", Series())], doc) is None

"""benchmarks/ui_main_thread: what it sums from a Chromium trace, on a made-up trace (so the
right sums are known): only the main thread of the renderer that shows the page's URL counts,
not the other page's renderer that the same trace holds."""

from __future__ import annotations

import pytest

from tests.benchmod import load

URL = "http://127.0.0.1:9000/"


def renderer(pid: int, tasks_ms: float, layout_objects: int) -> list[dict]:
    """One renderer's main thread (tid 1) and a worker thread (tid 2) of the same process."""
    def x(name: str, ms: float, tid: int = 1, **args: object) -> dict:
        return {"name": name, "ph": "X", "pid": pid, "tid": tid, "dur": ms * 1000, "args": args}
    return [
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": 1,
         "args": {"name": "CrRendererMain"}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": 2,
         "args": {"name": "ThreadPoolForegroundWorker"}},
        x("RunTask", tasks_ms), x("RunTask", 1.5),
        x("UpdateLayoutTree", 4.0), x("Paint", 3.0),
        x("Layout", 2.0, beginData={"totalObjects": layout_objects, "dirtyObjects": 3}),
        x("RunTask", 500.0, tid=2),  # not the main thread
        {"name": "AnimationFrame::Render", "ph": "b", "pid": pid, "tid": 1, "id": "0x1"},
        {"name": "AnimationFrame::Render", "ph": "e", "pid": pid, "tid": 1, "id": "0x1"},
        {"name": "StyleRecalcInvalidationTracking", "ph": "I", "pid": pid, "tid": 1,
         "args": {"data": {"reason": "Animation"}}},
    ]


def trace(pages: dict[int, str]) -> dict:
    started = {"name": "TracingStartedInBrowser", "ph": "I", "pid": 1, "tid": 1,
               "args": {"data": {"frames": [{"processId": pid, "url": url}
                                            for pid, url in pages.items()]}}}
    return {"traceEvents": [started, *renderer(11, 40.0, 1442), *renderer(22, 900.0, 31)]}


def test_only_the_pages_own_renderer_main_thread_counts() -> None:
    mod = load("ui_main_thread")
    work = mod.main_thread_work(trace({11: URL, 22: URL + "bench/plain/?preset=x"}), URL)
    # the plain page's URL starts with the Playground's: both renderers would match a prefix
    # test, so the sums would hold the other page's 900 ms
    assert work == {"tasks": 41.5, "style": 4.0, "layout": 2.0, "paint": 3.0, "frames": 1,
                    "layout_objects": 1442, "style_invalidations": {"Animation": 1}}


def test_a_trace_without_the_pages_renderer_is_an_error() -> None:
    mod = load("ui_main_thread")
    with pytest.raises(SystemExit, match="no renderer"):
        mod.main_thread_work(trace({22: "http://elsewhere/"}), URL)

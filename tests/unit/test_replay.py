"""Recordings: format, conversion from run history, replay order and pace (scripted clock)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
from pathlib import Path

import pytest

from playground.core.metrics import RawTimings, Usage
from playground.core.record import RequestRecord
from playground.core.request import build
from playground.core.runner import Recording
from playground.errors import PresetError
from playground.lab.replay import RecordingFile, from_history, load, play, recordings, save
from playground.settings import REPO_ROOT
from playground.specs.presets import Variant


def recorded(name: str, stream: bool, t0: float, tokens: list[tuple[float, str]],
             end: float) -> RequestRecord:
    v = Variant(name=name, stream=stream, max_tokens=8)
    raw = RawTimings(streaming=stream, t_send=t0, t_headers=t0 + 0.01,
                     t_first_chunk=tokens[0][0] if stream else end,
                     t_first_content=tokens[0][0] if stream else None, t_last=end,
                     token_times=[t for t, _ in tokens] if stream else [],
                     token_text=[("", x) for _, x in tokens] if stream else [],
                     usage=Usage(prompt_tokens=5, completion_tokens=len(tokens)),
                     finish_reason="length", http_status=200)
    rec = Recording(v, build(v, "hi", "m"), "http://server/v1", raw, status="done",
                    content="".join(x for _, x in tokens))
    return RequestRecord.of(rec)


HISTORY = [recorded("fast", True, 100.0, [(100.2, "a"), (100.3, "b"), (100.5, "c")], 100.5),
           recorded("slow", False, 100.05, [(0, "x"), (0, "y")], 101.5)]


class FakeTime:
    """Virtual time: sleepers wake in time order; the clock jumps to the next wake-up once
    every task is blocked."""

    def __init__(self) -> None:
        self.now = 50.0
        self.waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self.seq = itertools.count()

    def clock(self) -> float:
        return self.now

    async def sleep(self, s: float) -> None:
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self.waiters, (self.now + s, next(self.seq), fut))
        await fut

    def run(self, coro: object) -> None:
        async def main() -> None:
            task = asyncio.ensure_future(coro)  # type: ignore[arg-type]
            while not task.done():
                for _ in range(10):
                    await asyncio.sleep(0)
                if self.waiters:
                    t, _, fut = heapq.heappop(self.waiters)
                    self.now = max(self.now, t)
                    fut.set_result(None)
            task.result()

        asyncio.run(main())


def test_history_to_recording_is_relative_to_the_first_send() -> None:
    rec = from_history(HISTORY, title="t")
    fast, slow = rec.columns
    assert fast.t_send == 0 and slow.t_send == pytest.approx(0.05)
    assert [t for t, _, _ in fast.tokens] == pytest.approx([0.2, 0.3, 0.5])
    assert slow.tokens == [] and slow.content == "xy"
    assert rec.prompt == "hi" and "api_key" not in json.dumps(rec.model_dump())


def test_replay_reproduces_order_text_and_timings_on_a_scripted_clock() -> None:
    rec = from_history(HISTORY)
    recs = recordings(rec)
    fake = FakeTime()
    fake.run(play(rec, recs, clock=fake.clock, sleep=fake.sleep))
    fast, slow = recs
    assert fast.content == "abc" and slow.content == "xy"
    assert fast.status == slow.status == "done"
    # the replay's own measurements equal the recorded ones (exact on a scripted clock)
    for r, orig in zip(recs, HISTORY, strict=True):
        for key in ("ttft_ms", "e2e_ms", "ttfa_ms"):
            got, want = getattr(r.metrics(), key), getattr(orig.metrics, key)
            assert (got is None) == (want is None)
            if want is not None:
                assert got == pytest.approx(want, abs=1e-6)


def test_speed_scales_the_pace_but_shows_the_recorded_numbers() -> None:
    rec = from_history(HISTORY)
    recs = recordings(rec)
    fake = FakeTime()
    start = fake.now
    fake.run(play(rec, recs, speed=2.0, clock=fake.clock, sleep=fake.sleep))
    span_s = max(c.t_last or 0.0 for c in rec.columns)
    assert fake.now - start == pytest.approx(span_s / 2)  # played in half the time
    for r, orig in zip(recs, HISTORY, strict=True):  # the numbers are the recorded ones
        assert r.metrics().e2e_ms == pytest.approx(orig.metrics.e2e_ms)


def test_save_load_round_trip_and_version_checks(tmp_path: Path) -> None:
    path = save(from_history(HISTORY, title="t"), tmp_path / "r.json")
    assert isinstance(load(path), RecordingFile)
    data = json.loads(path.read_text())
    for field, value, expect in (("version", 2, "version"), ("format", "other", "format")):
        bad = tmp_path / f"bad-{field}.json"
        bad.write_text(json.dumps({**data, field: value}))
        with pytest.raises(PresetError, match=expect):
            load(bad)
    bad = tmp_path / "bad-col.json"
    bad.write_text(json.dumps({**data, "columns": [{"variant": {}}]}))
    with pytest.raises(PresetError, match=r"columns\.0"):
        load(bad)


def test_a_run_history_jsonl_loads_directly(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(r.line()) for r in HISTORY) + "\n{torn", "utf-8")
    assert [c.variant["name"] for c in load(path).columns] == ["fast", "slow"]
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(PresetError, match="no recorded request"):
        load(tmp_path / "empty.jsonl")


def test_shipped_recordings_load() -> None:
    from playground.settings import REPO_ROOT

    shipped = sorted((REPO_ROOT / "presets" / "recordings").glob("*.json"))
    assert shipped
    for p in shipped:
        rec = load(p)
        assert len(rec.columns) >= 2 and rec.environment


def test_the_h200_ladder_recording_draws_the_ladder_with_step_a_on_transformers() -> None:
    from playground.lab import ladder as lad
    from playground.settings import REPO_ROOT
    from playground.specs.ladders import load_ladder

    rec = load(REPO_ROOT / "presets" / "recordings" / "h200-ladder-seed-004.json")
    recs = recordings(rec)
    fake = FakeTime()
    fake.run(play(rec, recs, speed=1.0, clock=fake.clock, sleep=fake.sleep))  # scripted clock
    found = lad.from_environment(rec.environment, recs)
    assert found is not None
    name, slots = found
    assert name == "seed-004" and len(slots) == 4
    assert [s.variant.engine for s in slots if not isinstance(s, str)] == [
        "transformers", "vllm", "vllm", "vllm"]
    rows = lad.rows(load_ladder(REPO_ROOT / "presets", name), slots)
    assert all(r.status == "measured" for r in rows)
    a, b = rows[0], rows[1]
    assert a.e2e_ms is not None and b.e2e_ms is not None and b.saved_ms is not None
    assert a.e2e_ms == pytest.approx(rec.columns[0].t_last * 1000, rel=1e-3)  # as recorded


def _good() -> dict:
    import json

    return json.loads((REPO_ROOT / "presets" / "recordings" / "cpu-demo-seed-vs-optimized.json")
                      .read_text())


def _bad_recordings(tmp: Path) -> dict[str, tuple[Path, str, str]]:
    """name -> (file, the field the error must name, words of the reason)."""
    import json

    from playground.lab.replay import MAX_BYTES, MAX_TOKENS

    def write(name: str, text: str | bytes) -> Path:
        p = tmp / name
        p.write_bytes(text if isinstance(text, bytes) else text.encode())
        return p

    def variant(**change: object) -> str:
        d = _good()
        for k, v in change.items():
            target, _, key = k.partition("__")
            if target == "env":
                d["environment"][key] = v
            elif target == "col":
                d["columns"][0][key] = v
            elif target == "var":
                d["columns"][0]["variant"][key] = v
        return json.dumps(d)

    big = tmp / "big.json"
    with big.open("wb") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: nothing written
    good = _good()
    many = [[0.001 * i, "", "x"] for i in range(MAX_TOKENS + 1)]
    return {
        "over the size limit": (big, "(file)", "the limit is"),
        "random bytes": (write("rnd.json", b"\xff\xfe" + bytes(range(256)) * 16), "(file)",
                         "not UTF-8"),
        "100k-deep nesting": (write("deep.json", "[" * 100_000 + "]" * 100_000), "(file)",
                              "nests deeper"),
        "a .jsonl line that is a number": (write("five.jsonl", "5\n"), "(line)",
                                           "expected a JSON object"),
        "a variant name that fails validation": (write("name.json", variant(
            var__name="<img src=x onerror=alert(1)>")), "columns.0.variant.name", ""),
        "environment.floor_ms not a number": (write("floor.json", variant(env__floor_ms="abc")),
                                              "environment.floor_ms", "not a number"),
        "t_last of 1e9 s (an endless replay)": (write("long.json", variant(col__t_last=1e9)),
                                                "columns.0.t_last", "at most 10 minutes"),
        "too many tokens": (write("many.json", variant(col__tokens=many)), "columns.0.tokens",
                            "at most"),
        "not a recording": (write("other.json", json.dumps({"a": 1})), "format", "expected"),
        "columns not a list": (write("cols.json", json.dumps({**good, "columns": 5})),
                               "columns", ""),
    }


BAD_CASES = ["over the size limit", "random bytes", "100k-deep nesting",
             "a .jsonl line that is a number", "a variant name that fails validation",
             "environment.floor_ms not a number", "t_last of 1e9 s (an endless replay)",
             "too many tokens", "not a recording", "columns not a list"]


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.reliability(
    case=f"an uploaded or picked recording: {c}", where="the replay panel's message (file, "
    "field, reason) from replay.load, before anything plays; `playground record` the same",
    order=60 + i)) for i, c in enumerate(BAD_CASES)])
def test_every_malformed_recording_gets_a_named_error(case: str, tmp_path: Path,
                                                      observed) -> None:
    path, field, words = _bad_recordings(tmp_path)[case]
    with pytest.raises(PresetError) as e:
        load(path)
    observed(str(e.value)[:200])
    assert e.value.field == field and words in e.value.reason, str(e.value)
    assert str(path) in str(e.value)  # the file is named too


def test_the_shipped_recordings_pass_the_checks() -> None:
    for path in (REPO_ROOT / "presets" / "recordings").glob("*.json"):
        assert load(path).columns


def test_a_replay_click_plays_only_after_its_head_succeeded() -> None:
    """The head and the playback were fired side by side by one click: under load the queue
    answered the head after the playback had marked the session busy, and the head refused its
    own replay ("a run is already in progress"), so the panel never said "replay ended"."""
    from playground.settings import Settings
    from playground.ui.blocks import build_ui
    from playground.ui.context import UIContext

    ctx = UIContext.create(Settings())
    try:
        demo = build_ui(ctx)
        plays = [f for f in demo.fns.values()
                 if f.name == "do_play" and "replay_panel" in f.fn.__module__]
        assert plays  # the Replay button and each shipped recording's quick button
        for f in plays:
            assert f.trigger_after is not None and f.trigger_only_on_success
            assert demo.fns[f.trigger_after].name == "do_head"
    finally:
        ctx.measure.stop()

"""The live path's pure parts: the live feed's stream and channels, the warm-up plan and the cold
hint, the context check without /tokenize, the remembered server facts, the ladder."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from playground.core import port as port_mod
from playground.core.client import Event
from playground.core.metrics import RawTimings, Usage
from playground.core.preflight import preflight, surely_fits
from playground.core.request import build
from playground.core.runner import Recording
from playground.core.warmup import cold_hint, warm_variants
from playground.lab import ladder as lad
from playground.outputs.live_svg import latency_bars, live_timeline, nice_span
from playground.server.http import ModelInfo, ServerInfo
from playground.settings import Settings
from playground.specs.ladders import ladder_names, load_ladder, step_variants
from playground.specs.presets import GuidedJson, PresetLibrary, Variant
from playground.ui.live_channels import Feeds, follow_channel
from playground.ui.live_feed import Feed, stream

PRESETS = Settings().presets_dir


def live(name: str = "v", stream_: bool = True, **kw: Any) -> Recording:
    v = Variant(name=name, stream=stream_, max_tokens=16, **kw)
    return Recording(v, build(v, "hi", "m"), "http://x/v1", RawTimings(streaming=stream_))


def events(frames: list[bytes]) -> list[dict]:
    return [json.loads(f[len(b"data: "):]) for f in frames if f.startswith(b"data: ")]


def test_the_feed_streams_appended_text_views_and_an_end() -> None:
    recs = [live("a"), live("b")]

    async def produce(feed: Feed) -> None:
        t = time.perf_counter()
        for r in recs:
            r.feed(Event("sent", t))
        for i in range(6):
            for k, r in enumerate(recs):
                r.feed(Event("chunk", time.perf_counter(), content=f"{k}{i} "))
            await asyncio.sleep(0.01)
        for r in recs:
            r.feed(Event("usage", time.perf_counter(), usage=Usage(completion_tokens=6)))
            r.feed(Event("done", time.perf_counter()))
        feed.finish()

    async def main(instrument: bool) -> list[bytes]:
        recs[:] = [live("a"), live("b")]  # fresh recordings for each run
        feed = Feed(recs=recs, where=[0, 2])
        task = asyncio.create_task(produce(feed))
        out = [chunk async for chunk in stream(feed, frame_s=0.0, poll_s=0.001,
                                               instrument=instrument)]
        await task
        return out

    evs = events(asyncio.run(main(instrument=False)))
    # benchmark instrumentation only in an instrumented app (Settings.ui_instrument)
    assert not any("sent_at" in ev for ev in evs)
    evs = events(asyncio.run(main(instrument=True)))
    assert evs[-1] == {"end": True}
    text: dict[str, str] = {}
    for ev in evs:
        for key, start, piece in ev.get("text", []):
            assert start == len(text.get(key, ""))  # appended, never re-sent
            text[key] = text.get(key, "") + piece
    assert text == {"answer-0": recs[0].content, "answer-2": recs[1].content}
    final = evs[-2]
    assert "first answer character" in final["headline"] and "<svg" in final["timeline"]
    assert "TTFT" in final["bars"] and final["status"] == {"0": "", "2": ""}  # status cleared
    assert all("sent_at" in ev for ev in evs[:-1])  # when each was sent (instrumented)
    assert all(ev["replay"] == "" for ev in evs if "headline" in ev)  # live: no replay label


def test_a_replay_says_so_in_every_view_and_never_waits_for_a_server() -> None:
    from playground.ui.live_feed import _views

    v = Variant(name="r", stream=True, thinking=False, max_tokens=8)
    waiting = Recording(v, build(v, "hi", "m"), "http://rec/v1", RawTimings(streaming=True))
    label = "replay of H200: seed default vs all optimizations (NVIDIA H200, 2026-12-03)"
    views = _views(Feed(recs=[waiting], where=[0], replay=label), final=False)
    assert views["replay"] == label
    assert views["status"]["0"].startswith("▶ replay · ")
    assert "waiting for the server" not in views["status"]["0"]
    assert label in views["headline"] and "recorded numbers" in views["headline"]
    live = _views(Feed(recs=[waiting], where=[0]), final=False)
    assert "waiting for the server" in live["status"]["0"] and live["replay"] == ""


def test_a_page_channel_follows_its_runs_and_a_bad_token_follows_nothing() -> None:
    feeds = Feeds()
    token = "A" * 24
    first = feeds.open(token)
    second = feeds.open(token)
    assert first.done and not second.done  # a new run of the page ends the old one's feed
    assert feeds._channels[token].feed is second
    orphan = feeds.open("../../etc")  # malformed: a feed nobody follows
    assert "../../etc" not in feeds._channels and not orphan.done


def test_a_page_that_goes_away_stops_the_run_it_watched() -> None:
    feeds = Feeds()
    token = "B" * 24
    stopped: list[bool] = []

    async def main() -> None:
        feed = feeds.open(token)
        feed.recs, feed.where = [live("a")], [0]
        feed.on_close = lambda: stopped.append(True)
        page = follow_channel(feeds._channels[token])
        assert await anext(page) == b": live\n\n"
        await anext(page)  # the run's first views
        await page.aclose()  # the tab closed

    asyncio.run(main())
    assert stopped == [True]


def test_not_sent_columns_get_their_reason_in_the_status_line() -> None:
    """While the run streams; at its end the column's own box says it (once, not twice)."""
    async def main() -> list[bytes]:
        rec = live("ok")
        rec.feed(Event("sent", time.perf_counter()))
        feed = Feed(recs=[rec], where=[1], notes={0: "❌ not sent -- <max_tokens>"})

        async def end() -> None:
            await asyncio.sleep(0.2)
            feed.finish()

        ending = asyncio.create_task(end())
        out = [c async for c in stream(feed, poll_s=0.001)]
        await ending
        return out

    evs = [e for e in events(asyncio.run(main())) if "status" in e]
    assert evs[0]["status"]["0"] == "❌ not sent -- &lt;max_tokens&gt;"  # escaped
    assert evs[-1]["status"]["0"] == ""


def test_warm_up_covers_every_preset_path_and_schema_once() -> None:
    lib = PresetLibrary(PRESETS)
    vs = warm_variants(lib)
    assert all(v.max_tokens <= 4 for v in vs)
    assert any(v.guided_json is not None and not v.stream for v in vs)  # the grammar
    assert {v.stream for v in vs} == {True, False} and {v.thinking for v in vs} == {True, False}
    bodies = [json.dumps(build(v, "w", "m").body(), sort_keys=True) for v in vs]
    assert len(bodies) == len(set(bodies))


def test_cold_hint_flags_a_guided_request_queued_long() -> None:
    guided = live("g", guided_json=GuidedJson(name="address", schema={"type": "object"}))
    guided.raw.server_metrics = {"queue_time_ms": 2400.0, "time_to_first_token_ms": 2450.0,
                                 "generation_time_ms": 300.0}
    assert "compiling its JSON grammar" in cold_hint(guided)
    guided.raw.server_metrics = {**guided.raw.server_metrics, "queue_time_ms": 3.0}
    assert cold_hint(guided) == ""
    free = live("f")
    free.raw.server_metrics = {"queue_time_ms": 2400.0, "time_to_first_token_ms": 2450.0,
                               "generation_time_ms": 300.0}
    assert cold_hint(free) == ""  # queued, but nothing to compile: not called cold
    assert cold_hint(live("none")) == ""  # no server metrics: nothing to say


def test_short_prompts_skip_tokenize_long_ones_ask() -> None:
    v = Variant(name="v", max_tokens=256)
    assert surely_fits(v, "短" * 100, 2048)
    assert not surely_fits(v, "短" * 700, 2048)  # 2,100 bytes: the tokenizer decides
    calls: list[dict] = []

    async def count(url: str, key: str, body: dict) -> int:
        calls.append(body)
        return 10

    asyncio.run(preflight("u", "k", "m", 2048, v, "hello", token_count=count))
    assert calls == []
    asyncio.run(preflight("u", "k", "m", 2048, v, "x" * 3000, token_count=count))
    assert len(calls) == 1


def test_server_facts_are_remembered_per_url_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str | None]] = []

    async def info(url: str, key: str | None) -> ServerInfo:
        asked.append((url, key))
        return ServerInfo(url, True, "0.32.0", [ModelInfo("m", None, 2048)])

    monkeypatch.setattr(port_mod, "aserver_info", info)
    cached = port_mod.Remembering(ttl_s=60)

    async def main() -> None:
        await cached.info("u", "k1")
        await cached.info("u", "k1")
        await cached.info("u", "k2")  # another key is asked again: a bad key is not masked
        await port_mod.Remembering(ttl_s=0).info("u", "k1")

    asyncio.run(main())
    assert asked == [("u", "k1"), ("u", "k2"), ("u", "k1")]


def test_ladders_are_cumulative_and_skip_what_cannot_run_here() -> None:
    assert {"seed-004", "seeds-000-001"} <= set(ladder_names(PRESETS))
    ladder = load_ladder(PRESETS, "seed-004")
    b, c, d = step_variants(ladder, PRESETS)[1:]
    assert (b.prompt.name, b.guided_json) == ("long", None)
    assert (c.prompt.name, c.guided_json) == ("minimal", None)
    assert d.prompt.name == "minimal" and d.guided_json is not None  # C's change kept
    steps = lad.plan(ladder, PRESETS)
    assert steps[0] == lad.NEEDS_TRANSFORMERS and all(isinstance(s, Variant)
                                                      for s in steps[1:])
    recs = [live(f"s{i}", stream_=False) for i in range(3)]
    for rec, e2e in zip(recs, (1.0, 0.6, 0.5), strict=True):
        rec.feed(Event("sent", 10.0))
        rec.feed(Event("chunk", 10.0 + e2e, content='{"a": 1}'))
        rec.feed(Event("done", 10.0 + e2e))
    slots = lad.fill(steps, recs)
    rows = lad.rows(ladder, slots)
    assert rows[0].status == lad.NEEDS_TRANSFORMERS and rows[0].article_p50_ms == 2812
    assert rows[1].saved_ms is None and rows[2].saved_ms == pytest.approx(400.0)
    assert rows[3].saved_ms == pytest.approx(100.0)
    name, again = lad.from_environment(lad.environment("seed-004", slots), recs) or ("", [])
    assert name == "seed-004" and again == slots


def test_the_ladder_table_keeps_each_value_in_its_column_and_says_one_sample() -> None:
    """Seen after playing seed-004: step A's reason spanned the table so the article's
    "2,812 ms (3,150 ms)" sat under "JSON valid"; a slower step read "+1,731 ms" under
    "saved"; nothing said each step is one request."""
    import re

    from playground.ui.ladder_panel import table_html

    ladder = load_ladder(PRESETS, "seed-004")
    rows = [lad.StepRow("A: Transformers", None, None, None, 2812, [], None,
                        lad.NEEDS_TRANSFORMERS),
            lad.StepRow("B: vLLM", 700.0, 700.0, None, 1124, [], None, "measured"),
            lad.StepRow("C: short", 2431.0, 2431.0, -1731.0, 897, [], None, "measured"),
            lad.StepRow("D: guided", 1000.0, 1000.0, 1431.0, 723, [], True, "measured")]
    page = table_html(ladder, rows)
    trs = re.findall(r"<tr>(.*?)</tr>", page)
    widths = [sum(int(n or 1) for n in re.findall(r"<t[dh](?: colspan='(\d+)')?>", tr))
              for tr in trs]
    assert widths == [6] * 5  # every row as wide as the header
    cells_a = re.findall(r"<td(?: colspan='\d+')?>(.*?)</td>", trs[1])
    assert cells_a[2] == "2,812 ms (3,150 ms)" and cells_a[3] == "-"  # under the article
    assert page.count("needs a Transformers server") == 1
    assert "<span class='ladder-slower'>1,731 ms slower</span>" in page
    assert "<span class='ladder-faster'>1,431 ms faster</span>" in page
    assert "saved" not in page and "+1,731" not in page
    assert "One sample per step" in page


def test_headline_cards_are_the_columns_and_colour_follows_the_sign() -> None:
    """Card 1 sat above column 1 (step A, not run) and read "1. seed-004-b"; "1.4x slower"
    was printed in the green of "faster"."""
    from playground.ui.render import headline_html

    recs = [live(f"seed-004-{x}", stream_=False) for x in "bcd"]
    for rec, e2e in zip(recs, (0.7, 1.0, 0.5), strict=True):
        rec.feed(Event("sent", 10.0))
        rec.feed(Event("chunk", 10.0 + e2e, content="x"))
        rec.feed(Event("done", 10.0 + e2e))
    titles = {i: step.label for i, step in enumerate(load_ladder(PRESETS, "seed-004").steps)}
    page = headline_html(recs, 20.0, where=[1, 2, 3], titles=titles,
                         notes={0: "⏭️ needs a Transformers server"})
    cards = page.split('<div class="hl-card ')[1:]
    assert len(cards) == 4
    assert f"1. {titles[0]}" in cards[0] and "not run" in cards[0]
    assert "needs a Transformers server" in cards[0]
    assert f"2. {titles[1]}" in cards[1] and "baseline" in cards[1]
    assert 'class="hl-cmp hl-slower">1.4× slower than column 2' in cards[2]
    assert 'class="hl-cmp hl-faster">1.4× faster than column 2' in cards[3]
    assert "seed-004-b" not in page  # the step, not the variant's name


def test_closed_pages_never_push_an_open_page_out_of_the_channel_table() -> None:
    """The attack of issue 4/7: 256 `GET /live/<random>` closed at once dropped the least
    recently used channel -- an open page's -- so its next run had no follower and was
    stopped after 20 s. Now an open page's channel stays whatever else comes and goes; pages
    opened and dropped at once never fill the table (a new page still gets its channel: with
    a 5 s grace for them, 300 such pages locked every new page out); a page whose run ended
    keeps its channel CLOSED_S to read the end; a table full of open pages refuses
    newcomers instead of evicting."""
    from playground.ui import live_channels

    feeds = Feeds()

    async def main() -> None:
        victim = "v" * 24
        page = follow_channel(feeds._channel(victim))  # type: ignore[arg-type]
        assert await anext(page) == b": live\n\n"
        ch = feeds._channels[victim]
        refused = 0
        for i in range(300):  # the attacker: open and close at once
            got = feeds._channel(f"attacker-{i:016d}")
            if got is None:
                refused += 1
                continue
            gen = follow_channel(got)
            await anext(gen)
            await gen.aclose()
        assert feeds._channels[victim] is ch and ch.followers == 1
        assert refused == 0
        assert feeds._channel("newcomer-0000000000") is not None  # a new page: its channel
        run = feeds.open(victim)
        assert run.channel is ch and not run.abandoned(grace_s=0)
        ended = feeds.open("ended-00000000000000")  # a page whose run ended, then it closed
        ended.finish()
        opened = []
        for i in range(live_channels.MAX_FEEDS):  # open pages, until the table is full
            got = feeds._channel(f"open-{i:016d}")
            if got is None:
                break
            opened.append(follow_channel(got))
            await anext(opened[-1])
        assert len(opened) == live_channels.MAX_FEEDS - 2  # beside the victim and `ended`
        assert "ended-00000000000000" in feeds._channels  # read within CLOSED_S: kept
        assert feeds._channels[victim] is ch
        assert feeds._channel("late-000000000000000") is None  # full of open pages: refused
        live_channels.CLOSED_S, saved = -1.0, live_channels.CLOSED_S
        try:  # past CLOSED_S the ended page's channel goes; no open page's does
            assert feeds._channel("late-000000000000000") is not None
            assert "ended-00000000000000" not in feeds._channels
            assert feeds._channels[victim] is ch
        finally:
            live_channels.CLOSED_S = saved
        for gen in opened:
            await gen.aclose()
        await page.aclose()

    asyncio.run(main())


def test_one_address_holds_a_bounded_number_of_live_streams() -> None:
    from starlette.requests import Request

    from playground.ui import live_channels

    feeds = Feeds()

    def request(token: str, host: str) -> Request:
        return Request({"type": "http", "method": "GET", "path": f"/live/{token}",
                        "headers": [], "client": (host, 1), "path_params": {"token": token},
                        "app": object(), "query_string": b""})

    async def main() -> None:
        held = []
        for i in range(live_channels.PER_ADDRESS):
            resp = await feeds._endpoint(request(f"page-{i:020d}", "10.0.0.7"))
            assert resp.status_code == 200
            body = resp.body_iterator  # type: ignore[attr-defined]
            await anext(body)  # the stream is open
            held.append(body)
        over = await feeds._endpoint(request("page-x-0000000000000", "10.0.0.7"))
        assert over.status_code == 429 and b"too many live pages" in over.body
        other = await feeds._endpoint(request("page-y-0000000000000", "10.0.0.8"))
        assert other.status_code == 200  # another visitor is not affected
        await other.body_iterator.aclose()  # type: ignore[attr-defined]
        await held[0].aclose()  # a tab closed: its slot is free again
        again = await feeds._endpoint(request("page-z-0000000000000", "10.0.0.7"))
        assert again.status_code == 200
        await again.body_iterator.aclose()  # type: ignore[attr-defined]
        for b in held[1:]:
            await b.aclose()
        assert feeds.streams == {}

    asyncio.run(main())


def test_the_schema_badge_shows_the_validators_message_as_text() -> None:
    """The badge quoted the model's output inside the validator's message as Markdown: an
    `<img src=...>` in an answer was fetched by every visitor's browser."""
    from playground.ui.render import badge_md

    rec = live("g", guided_json=GuidedJson(name="s", schema={
        "type": "object", "properties": {"a": {"type": "integer"}}}))
    rec.content, rec.status = '{"a": "<img src=http://x/p.png>"}', "done"
    got = badge_md(rec)
    assert "schema-INVALID" in got and "<img" not in got and "&lt;img" in got


def test_svg_views_scale_and_escape() -> None:
    assert [nice_span(x) for x in (1, 150, 420, 999, 1001)] == [100, 200, 500, 1000, 2000]
    rec = live("n")
    rec.feed(Event("sent", 1.0))
    rec.feed(Event("chunk", 1.05, content="x"))
    svg = live_timeline([rec], 1.2)
    assert svg.startswith("<svg") and "TTFT 50 ms" in svg
    assert latency_bars([live("none")]) == ""  # nothing measured yet: nothing drawn


def test_a_run_no_page_follows_is_abandoned_after_the_grace() -> None:
    """The rule that frees a visitor's slots when they leave (or never had a page)."""
    import time

    from playground.ui.live_channels import Channel
    from playground.ui.live_feed import Feed

    now = time.monotonic()
    nobody = Feed(opened=now - 30)  # a script's run: no page, no channel
    assert nobody.abandoned(grace_s=20) and not Feed(opened=now).abandoned(grace_s=20)
    ch = Channel.__new__(Channel)  # (no event loop needed for these fields)
    ch.followers, ch.left = 1, float("-inf")
    followed = Feed(opened=now - 300, channel=ch)
    assert not followed.abandoned(grace_s=20)  # its page is there
    ch.followers, ch.left = 0, now - 5
    assert not followed.abandoned(grace_s=20)  # the page reconnects within the grace
    ch.left = now - 25
    assert followed.abandoned(grace_s=20)  # gone
    # the grace is the app's setting (PLAYGROUND_GONE_AFTER_S), handed to every run's feed
    from playground.settings import Settings
    from playground.ui.context import UIContext

    feeds = UIContext.create(Settings.from_env({"PLAYGROUND_GONE_AFTER_S": "3"})).feeds
    short = feeds.open("not a token")
    assert short.grace_s == 3 and Feed().grace_s == 20
    short.opened = now - 5
    assert short.abandoned() and not Feed(opened=now - 5).abandoned()


def test_the_headline_counts_what_the_page_shows_and_never_compares_with_no_answer() -> None:
    """Column 1's reply was all reasoning (collapsed: the audience saw nothing): "no answer",
    and column 2 is not "N x faster" than it. With the reasoning shown, column 1's first
    character is its first reasoning token, and the comparison is made -- and labelled."""
    from playground.ui.render import headline_html

    thinker, answerer = live("thinker"), live("answerer")
    for rec, first, answer in ((thinker, 1.0, False), (answerer, 1.5, True)):
        rec.raw.t_send, rec.raw.t_first_chunk, rec.raw.t_last = 0.0, first, 2.0
        rec.raw.t_first_reasoning = first
        if answer:
            rec.raw.t_first_content = first + 0.1
            rec.content = "the answer"
        rec.raw.token_times = [first, 2.0]
        rec.reasoning, rec.status = "hm", "done"
    hidden = headline_html([thinker, answerer])
    assert hidden.count("first answer character") == 2
    assert '<div class="hl-big">no answer</div>' in hidden
    assert "faster" not in hidden and "slower" not in hidden
    assert '<div class="hl-big">1,600 ms</div>' in hidden  # the answer's first character
    shown = headline_html([thinker, answerer], show_reasoning=True)
    assert shown.count("first character (reasoning shown)") == 2
    assert "no answer" not in shown and "1.5× slower than column 1" in shown
    assert "one run each, no interval" in shown  # a single-run ratio says what it is

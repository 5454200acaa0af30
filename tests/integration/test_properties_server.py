"""Property: any valid variant builds a request the real server accepts (small max_tokens, so
each example is quick); the variants come from the same strategy as the unit properties."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from playground.core import request
from playground.core.pool import ClientPool
from playground.core.runner import new_recording, run_to_end
from playground.specs.presets import variant_from_dict
from tests.unit.test_properties import PRESETS, variant_dicts

pytestmark = pytest.mark.server


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow],
          derandomize=True)
@given(variant_dicts(), st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)),
                                min_size=1, max_size=60).filter(str.strip))
def test_any_valid_variant_is_accepted_by_the_server(vllm_server: str, data: dict[str, Any],
                                                     prompt: str) -> None:
    data = {**data, "max_tokens": min(data["max_tokens"], 6)}
    data["min_tokens"] = min(data.get("min_tokens", 0), 6) if "min_tokens" in data else None
    data = {k: v for k, v in data.items() if v is not None}
    v = variant_from_dict(data, PRESETS, source="h")
    rec = new_recording(v, request.build(v, prompt, "Qwen/Qwen3-0.6B"), vllm_server)

    async def go() -> None:
        pool = ClientPool("EMPTY")
        try:
            await run_to_end(pool, [rec], timeout_s=120)
        finally:
            await pool.aclose()

    asyncio.run(go())
    assert rec.error is None, (data, str(rec.error))
    assert rec.status == "done" and rec.raw.t_last is not None

"""A warm first run: after a server comes up, send each shipped preset's path and each shipped
schema's grammar once, so the first comparison a stakeholder sees is not a cold one.

What a cold server pays on first use, and what one warm-up request per case removes: compiling a
JSON schema's grammar (seconds on a GPU server's first guided request, spent in its queue), the
first request on a code path (streaming or not, thinking or not), and the prefix cache of each
system prompt. Requests are capped at a few tokens; their results are thrown away.

`cold_hint` flags a measured request whose server queue time betrays such a compilation.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from playground.core import request
from playground.core.metrics import server_parts
from playground.core.pool import ClientPool
from playground.core.runner import Recording, new_recording, run_many
from playground.specs.presets import GuidedJson, PresetLibrary, Variant

WARM_TOKENS = 4
WARM_PROMPT = "warm-up"
COMPILE_QUEUE_MS = 100.0  # a guided request queued this long on an idle server: compiling


@dataclass
class WarmState:
    """Shared between the warm-up task and whoever shows it (the UI, `playground serve`)."""

    state: Literal["idle", "warming", "done", "failed"] = "idle"
    total: int = 0
    finished: int = 0
    failed: int = 0
    started: float | None = None
    ended: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def warming(self) -> bool:
        return self.state == "warming"

    def text(self) -> str:
        if self.state == "warming":
            return (f"warming up: {self.finished}/{self.total} (each preset's path and each "
                    "schema's grammar once); a run now is labelled cold")
        if self.state in ("done", "failed") and self.started and self.ended:
            took = self.ended - self.started
            bad = f", {self.failed} failed" if self.failed else ""
            return f"warm: {self.total} warm-up requests in {took:.1f} s{bad}"
        return ""


def _key(v: Variant) -> str:
    return json.dumps(request.build(v, WARM_PROMPT, "m").body(), sort_keys=True)


def warm_variants(library: PresetLibrary) -> list[Variant]:
    """One variant per distinct path of the shipped presets, then one per shipped schema."""
    out: list[Variant] = []
    seen: set[str] = set()
    for v in library.variants.values():
        short = v.model_copy(update={"max_tokens": WARM_TOKENS, "ignore_eos": False,
                                     "min_tokens": None, "thinking_budget": None})
        key = _key(short)
        if key not in seen:
            seen.add(key)
            out.append(short)
    for name in library.schema_names():
        path = library.presets_dir / "schemas" / f"{name}.json"
        guided = GuidedJson(name=name, schema=json.loads(path.read_text("utf-8")))
        v = Variant(name=f"warm-{name}", stream=False, thinking=False, temperature=0.0,
                    max_tokens=WARM_TOKENS, guided_json=guided)
        key = _key(v)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


async def warm(pool: ClientPool, base_url: str, model: str, variants: Sequence[Variant],
               status: WarmState, *, concurrency: int = 2, timeout_s: float = 300.0
               ) -> WarmState:
    recs = [new_recording(v, request.build(v, WARM_PROMPT, model), base_url) for v in variants]
    status.state, status.total, status.started = "warming", len(recs), time.time()

    def done(rec: Recording) -> None:
        status.finished += 1
        if rec.error is not None:
            status.failed += 1
            status.notes.append(f"{rec.variant.name}: {rec.error}")

    try:
        await run_many(pool, recs, concurrency=concurrency, timeout_s=timeout_s, on_done=done)
        status.state = "failed" if status.failed == len(recs) and recs else "done"
    except BaseException:
        status.state = "failed"
        raise
    finally:
        status.ended = time.time()
    return status


def cold_hint(rec: Recording) -> str:
    """Why this request's time is not a warm number, or ""."""
    parts = server_parts(rec.raw)
    if parts is None or parts.queue_ms is None or rec.variant.guided_json is None:
        return ""
    if parts.queue_ms < COMPILE_QUEUE_MS:
        return ""
    return (f"🥶 queued {parts.queue_ms:,.0f} ms on the server: most likely compiling its "
            "JSON grammar (the first use of this schema); run again for a warm number")


async def warm_server(pool: ClientPool, base_url: str, api_key: str, model: str | None,
                      library: PresetLibrary, status: WarmState) -> WarmState:
    """Warm a server that just came up: resolve its model, then `warm` every path once."""
    from playground.core.compare import pick_model
    from playground.server.http import aserver_info

    status.state = "warming"
    try:
        info = await aserver_info(base_url, api_key)
        chosen = pick_model(model, info)
    except BaseException:
        status.state = "failed"
        raise
    return await warm(pool, base_url, chosen, warm_variants(library), status)

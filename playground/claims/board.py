"""The claims board: run every claim (and the API-statement checks) into the board document.

The document (claims.json) is built from results alone -- each check keeps its samples -- so
outputs/board_view and outputs/html can redraw every view of it without the run history.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from playground.claims.api_checks import run_api_checks
from playground.claims.run import ClaimResult, run_claim
from playground.core.compare import resolve_model
from playground.core.port import LIVE, Port
from playground.server.environment import environment
from playground.settings import Settings
from playground.specs.claims import Claim
from playground.specs.presets import PresetLibrary

FORMAT = "qwen-latency-lab/claims-board"
VERSION = 1


@dataclass
class BoardEvent:
    kind: str  # "claim-started" | "progress" | "claim-done" | "api-checks" | "finished"
    claim: str = ""
    index: int = 0
    total: int = 0
    done: int = 0
    requests: int = 0
    result: ClaimResult | None = None
    board: dict[str, Any] = field(default_factory=dict)


async def board_environment(settings: Settings, server_note: str = "", port: Port = LIVE
                            ) -> dict[str, Any]:
    env = await environment(settings.base_url, settings.api_key_value(), info_fn=port.info)
    return {**env, "server_flags": server_note or None}


async def run_board(settings: Settings, claims: Sequence[Claim], library: PresetLibrary, *,
                    with_servers: bool = False, api_checks: bool = True,
                    examples: int | None = None, repetitions: int | None = None,
                    server_note: str = "", port: Port = LIVE) -> AsyncIterator[BoardEvent]:
    """Claims one after another (each interleaves its own variants), then the API checks."""
    env = await board_environment(settings, server_note, port)
    results: list[ClaimResult] = []
    total = len(claims)
    for i, claim in enumerate(claims):
        yield BoardEvent("claim-started", claim.id, i, total)
        async for ev in run_claim(settings, claim, library, with_servers=with_servers,
                                  examples=examples, repetitions=repetitions, port=port):
            if ev.kind == "progress":
                yield BoardEvent("progress", claim.id, i, total, ev.done, ev.total)
            elif ev.result is not None:
                results.append(ev.result)
                yield BoardEvent("claim-done", claim.id, i + 1, total, result=ev.result)
    checks: list[dict[str, Any]] = []
    if api_checks:
        try:
            model, _ = await resolve_model(settings, port)
            found = await asyncio.to_thread(run_api_checks, settings.base_url,
                                            settings.api_key_value(), model,
                                            vllm_python=settings.server_python())
            checks = [c.as_dict() for c in found]
        except Exception as e:  # reported on the board, never raised
            checks = [{"id": "api-checks", "article": "", "statement": "API checks",
                       "outcome": "could not check", "evidence": str(e), "instead": ""}]
        yield BoardEvent("api-checks", total=total)
    board = {"format": FORMAT, "version": VERSION, "environment": env,
             "claims": [r.as_dict() for r in results], "api_checks": checks,
             "options": {"with_servers": with_servers, "examples": examples,
                         "repetitions": repetitions}}
    yield BoardEvent("finished", index=total, total=total, board=board)

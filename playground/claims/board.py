"""The claims board: run every claim (and the API-statement checks) into the board document.

The document (claims.json) is built from results alone -- each check keeps its samples -- so
outputs/board_view and outputs/html can redraw every view of it without the run history.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from playground.claims.api_checks import run_api_checks
from playground.claims.run import ClaimResult, run_claim
from playground.claims.verdicts import (
    HOLM_POLICY,
    adjust,
    check_from_dict,
    claim_verdict,
    judged_p,
)
from playground.core.compare import resolve_model
from playground.core.port import LIVE, Port
from playground.server.environment import environment
from playground.settings import Settings
from playground.specs.claims import Claim
from playground.specs.presets import PresetLibrary

FORMAT = "qwen-latency-lab/claims-board"
VERSION = 2  # 2: permutation test + Holm, magnitude, demo-model honesty, model per claim


@dataclass
class BoardEvent:
    # "environment" (board: the environment, first) | "claim-started" | "progress" |
    # "claim-done" | "api-checks" | "finished"
    kind: str
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


def apply_holm(results: Sequence[ClaimResult]) -> int:
    """Re-decide every judged check of the board with Holm over all of them (in place);
    returns the family's size."""
    flat = [(r, i) for r in results if r.status == "done" for i in range(len(r.checks))]
    adjusted = adjust([r.checks[i] for r, i in flat])
    for (r, i), checked in zip(flat, adjusted, strict=True):
        r.checks[i] = checked
    for r in results:
        if r.status == "done":
            r.verdict = claim_verdict(r.checks)
    return sum(judged_p(c) is not None for c in adjusted)


def refamily(board: dict[str, Any]) -> dict[str, Any]:
    """A board document (one run, or rows merged from several) re-decided with Holm over all
    of its judged checks: the family is what the document shows."""
    claims = [dict(c, checks=list(c["checks"])) for c in board["claims"]]
    flat = [(c, i) for c in claims if c["status"] == "done" for i in range(len(c["checks"]))]
    adjusted = adjust([check_from_dict(c["checks"][i]) for c, i in flat])
    for (c, i), checked in zip(flat, adjusted, strict=True):
        c["checks"][i] = asdict(checked)
    for c in claims:
        if c["status"] == "done":
            c["verdict"] = claim_verdict([check_from_dict(x) for x in c["checks"]])
    family = sum(judged_p(x) is not None for x in adjusted)
    return {**board, "claims": claims, "policy": {"family_wise": HOLM_POLICY, "alpha": 0.05,
                                                  "family_size": family}}


async def run_board(settings: Settings, claims: Sequence[Claim], library: PresetLibrary, *,
                    with_servers: bool = False, api_checks: bool = True,
                    examples: int | None = None, repetitions: int | None = None,
                    server_note: str = "", port: Port = LIVE) -> AsyncIterator[BoardEvent]:
    """Claims one after another (each interleaves its own variants), then the API checks."""
    env = await board_environment(settings, server_note, port)
    results: list[ClaimResult] = []
    total = len(claims)
    yield BoardEvent("environment", total=total, board=env)
    for i, claim in enumerate(claims):
        yield BoardEvent("claim-started", claim.id, i, total)
        async for ev in run_claim(settings, claim, library, with_servers=with_servers,
                                  examples=examples, repetitions=repetitions, port=port,
                                  thinking_model=not env.get("real_small_model")):
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
    board = board_document(env, results, checks, {"with_servers": with_servers,
                                                  "examples": examples,
                                                  "repetitions": repetitions})
    yield BoardEvent("finished", index=total, total=total, board=board)


def board_document(env: dict[str, Any], results: Sequence[ClaimResult],
                   checks: list[dict[str, Any]], options: dict[str, Any], *,
                   stopped: str = "") -> dict[str, Any]:
    """The board file: the claims that finished, re-decided with Holm over exactly them
    (in place), the API statements, the options; `stopped` says why it holds fewer claims
    than were asked for (a Stop)."""
    family = apply_holm(results)
    board = {"format": FORMAT, "version": VERSION, "environment": env,
             "claims": [r.as_dict() for r in results], "api_checks": checks,
             "options": options,
             "policy": {"family_wise": HOLM_POLICY, "alpha": 0.05, "family_size": family}}
    if stopped:
        board["stopped"] = stopped
    return board

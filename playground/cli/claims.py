"""`playground claims`: the claims board headless -> claims.json, claims.md, claims-report.html."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from playground.claims.board import run_board
from playground.errors import ValidationFailed
from playground.outputs.board_view import BOARD_HEADERS, board_rows
from playground.outputs.files import write_board_files as write_board
from playground.outputs.tables import as_dicts, text_table
from playground.settings import Settings
from playground.specs.claims import load_claims
from playground.specs.presets import PresetLibrary


def run_claims(settings: Settings, out: Path, *, only: list[str] | None, with_servers: bool,
               api_checks: bool, examples: int | None, repetitions: int | None,
               server_note: str) -> int:
    claims, errors = load_claims(settings.presets_dir)
    for e in errors:
        print(f"warning: skipped a claim file: {e}", file=sys.stderr)
    if only:
        unknown = [c for c in only if c not in claims]
        if unknown:
            raise ValidationFailed("--only", f"unknown claim id(s) {unknown}; known: "
                                   + ", ".join(sorted(claims)))
        chosen = [claims[c] for c in only]
    else:
        chosen = list(claims.values())
    library = PresetLibrary(settings.presets_dir, settings.user_presets_dir)

    async def go() -> dict:
        board: dict = {}
        async for ev in run_board(settings, chosen, library, with_servers=with_servers,
                                  api_checks=api_checks, examples=examples,
                                  repetitions=repetitions, server_note=server_note):
            if ev.kind == "claim-started":
                print(f"[{ev.index + 1}/{ev.total}] {ev.claim} ...", file=sys.stderr)
            elif ev.kind == "claim-done" and ev.result is not None:
                r = ev.result
                what = r.verdict if r.status == "done" else f"{r.status}: {r.reason}"
                print(f"    {what}", file=sys.stderr)
            elif ev.kind == "api-checks":
                print("API statements checked", file=sys.stderr)
            elif ev.kind == "finished":
                board = ev.board
        return board

    board = asyncio.run(go())
    paths = write_board(board, out)
    rows = as_dicts(BOARD_HEADERS, board_rows(board))
    print(text_table(rows, ["claim", "article's number", "ours (median, 95% CI)", "verdict"]))
    for a in board["api_checks"]:
        print(f"  API: {a['statement']} -> {a['outcome']}")
    for kind, p in paths.items():
        print(f"{kind}: {p}")
    failed = [c["id"] for c in board["claims"] if c["status"] == "failed"]
    if failed:
        print(f"error: {len(failed)} claim(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0

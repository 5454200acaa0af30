"""Finished results -> files: a run's requests.csv / results.json / report.html, and a claims
board's claims.json / claims.md / claims-report.html. Knows nothing of how they were measured."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from playground.core.record import RequestRecord
from playground.core.results import ResultsFile, RunSummary
from playground.outputs import board_view, html
from playground.outputs.html import PlotlyJs
from playground.server.series import Series

__all__ = ["CSV_FIELDS", "PlotlyJs", "csv_rows", "write_board_files", "write_run_files"]

CSV_FIELDS = ["trial", "variant", "example", "repetition", "status", "error", "ttft_ms",
              "ttfa_ms", "visible_wait_ms", "e2e_ms", "tpot_ms", "decode_tok_s",
              "prompt_tokens", "completion_tokens", "finish_reason", "json_valid",
              "schema_valid", "field_accuracy"]


def csv_rows(timed: Sequence[RequestRecord]) -> list[dict[str, Any]]:
    out = []
    for r in timed:
        m, s = r.metrics, r.score
        out.append({
            "trial": r.trial, "variant": r.name, "example": r.example,
            "repetition": r.repetition, "status": r.status,
            "error": r.error.message if r.error else None, "ttft_ms": m.ttft_ms,
            "ttfa_ms": m.ttfa_ms, "visible_wait_ms": m.visible_wait_ms, "e2e_ms": m.e2e_ms,
            "tpot_ms": m.tpot_ms, "decode_tok_s": m.decode_tok_s,
            "prompt_tokens": m.prompt_tokens, "completion_tokens": m.completion_tokens,
            "finish_reason": r.raw.finish_reason,
            "json_valid": s.json_valid if s else None,
            "schema_valid": s.schema_valid if s else None,
            "field_accuracy": s.field_accuracy if s else None,
        })
    return out


def write_run_files(summary: RunSummary, timed: Sequence[RequestRecord], out_dir: Path,
                    *, plotlyjs: PlotlyJs = "inline", series: Series | None = None
                    ) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out_dir / "requests.csv", "json": out_dir / "results.json",
             "html": out_dir / "report.html"}
    with paths["csv"].open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        w.writerows(csv_rows(timed))
    doc = ResultsFile(summary=summary, requests=list(timed)).model_dump(mode="json",
                                                                        by_alias=True)
    paths["json"].write_text(json.dumps(doc, ensure_ascii=False, indent=1), "utf-8")
    paths["html"].write_text(html.report(summary, timed, plotlyjs=plotlyjs, series=series),
                             "utf-8")
    return paths


def write_board_files(board: dict[str, Any], out_dir: Path, *,
                      plotlyjs: PlotlyJs = "inline") -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / "claims.json", "md": out_dir / "claims.md",
             "html": out_dir / "claims-report.html"}
    paths["json"].write_text(json.dumps(board, ensure_ascii=False, indent=1, default=str),
                             "utf-8")
    paths["md"].write_text(board_view.markdown(board), "utf-8")
    paths["html"].write_text(html.board(board, plotlyjs=plotlyjs), "utf-8")
    return paths

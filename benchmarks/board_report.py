"""A published claims board, re-decided and re-rendered from what is committed (run HERE).

    python benchmarks/board_report.py docs/results/h200/claims.json [more boards ...]

For each board JSON: every row's raw run file is looked up among the committed results (by name,
under the board's machine folder) and `run_path` set to it, relative to the repository; a row
whose file was not kept says so in `run_file`. Rows with a raw file get the notes that are
computed from the requests (the thinking budget's). Then the board is one Holm family again
(claims/board.refamily, with claims/verdicts.claim_verdict: a compound claim part by part) and
its Markdown -- and its HTML report, where one is published -- is written next to it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from playground.claims.board import refamily  # noqa: E402
from playground.claims.run import worked  # noqa: E402
from playground.lab.store import read_run  # noqa: E402
from playground.outputs import board_view, html  # noqa: E402
from playground.specs.claims import load_claims  # noqa: E402

NOT_KEPT = "not kept: {} stayed on the machine that ran it"


def find_run(machine_dir: Path, run_path: str | None) -> Path | None:
    if not run_path:
        return None
    hits = sorted(machine_dir.rglob(Path(run_path).name))
    return hits[0] if hits else None


def notes(claim: dict[str, Any], run_file: Path) -> dict[str, str]:
    """The notes a claim's requests give (claims/run.worked: a thinking budget's, an engine
    comparison's service and queueing)."""
    spec = load_claims(ROOT / "presets")[0].get(claim["id"])
    run = read_run(run_file)
    if spec is None or spec.explain is None or run.meta.experiment is None:
        return {}
    explanation, note = worked(spec, run, run.meta.experiment, claim["baseline"])
    return {k: v for k, v in (("explanation", explanation), ("verdict_note", note)) if v}


def rebuild(board_json: Path) -> dict[str, Any]:
    machine_dir = board_json.parent
    board = json.loads(board_json.read_text("utf-8"))
    claims = []
    for c in board["claims"]:
        c = dict(c)
        if c["status"] == "done":
            found = find_run(machine_dir, c.get("run_path"))
            if found is None and c.get("run_path"):
                c["run_file"] = NOT_KEPT.format(c["run_path"])
                c["run_path"] = None
            elif found is not None:
                c["run_path"] = found.relative_to(ROOT).as_posix()
                c.pop("run_file", None)
                c.update(notes(c, found))
        claims.append(c)
    return refamily({**board, "claims": claims})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("boards", nargs="+", type=Path)
    a = ap.parse_args()
    for path in a.boards:
        board = rebuild(path.resolve())
        path.write_text(json.dumps(board, ensure_ascii=False, indent=1, default=str) + "\n",
                        "utf-8")
        path.with_suffix(".md").write_text(board_view.markdown(board), "utf-8")
        report = path.parent / "claims-report.html"
        if path.name == "claims.json" and report.is_file():
            report.write_text(html.board(board, plotlyjs="cdn"), "utf-8")
        print(f"rebuilt {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

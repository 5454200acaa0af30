"""Run history: one append-only JSONL file per run, written as results arrive.

Each line is one finished request (raw timestamps, the request body -- which never holds the
API key --, derived metrics, server info). A run that is stopped or killed keeps every line
already written; `read_run` skips a torn last line.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any


class RunFile:
    def __init__(self, path: Path) -> None:
        self.path = path

    def append(self, record: dict[str, Any]) -> None:
        line = json.dumps(record, ensure_ascii=False, default=str)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")
            f.flush()
            os.fsync(f.fileno())


class RunStore:
    def __init__(self, runs_dir: Path) -> None:
        self.runs_dir = runs_dir

    def new_run(self, kind: str) -> RunFile:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        folder = self.runs_dir / kind
        folder.mkdir(parents=True, exist_ok=True)
        return RunFile(folder / f"{stamp}-{uuid.uuid4().hex[:6]}.jsonl")

    def list_runs(self, kind: str) -> list[Path]:
        return sorted((self.runs_dir / kind).glob("*.jsonl"), reverse=True)


def read_run(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text("utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a torn last line from a killed writer
    return out

"""The published JSON Schemas of the lab's result documents (docs/schemas/): results.json
(core/results.ResultsFile) and sweep.json (core/sweep_doc.SweepDoc).

`python -m playground.core.schemas [DIR]` (re)writes them; a unit test fails when the committed
files differ from the models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from playground.core.results import ResultsFile
from playground.core.sweep_doc import SweepDoc


def schemas() -> dict[str, dict[str, Any]]:
    """The schemas, by file name."""
    return {"results.schema.json": ResultsFile.model_json_schema(),
            "sweep.schema.json": SweepDoc.model_json_schema()}


def text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schemas")
    out.mkdir(parents=True, exist_ok=True)
    for name, schema in schemas().items():
        (out / name).write_text(text(schema), "utf-8")
        print(f"wrote {out / name}")

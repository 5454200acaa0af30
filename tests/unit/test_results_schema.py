"""results.json and sweep.json are typed documents with published JSON Schemas: the committed
schemas are the models', every committed result file loads, and a file of another format
fails naming the file, the format and the field."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from playground.core.results import RESULTS_FORMAT, load_results
from playground.core.schemas import schemas, text
from playground.core.sweep_doc import SWEEP_FORMAT, load_sweep
from playground.errors import PresetError
from playground.settings import PACKAGE_DIR

ROOT = PACKAGE_DIR.parent


def committed(pattern: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", pattern], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    return [ROOT / p for p in out]


def test_the_published_schemas_are_the_models() -> None:
    for name, schema in schemas().items():
        path = ROOT / "docs" / "schemas" / name
        assert path.read_text("utf-8") == text(schema), (
            f"{path} is stale: python -m playground.core.schemas docs/schemas")


def test_result_files_written_before_the_format_was_named_still_load() -> None:
    results = [p for p in committed("docs/results/*.json")
               if '"summary"' in p.read_text("utf-8")[:200] and "claims" not in p.name]
    assert len(results) >= 2, results  # the H200 grid and probe-under-load files
    for path in results:
        doc = load_results(path)
        assert doc.summary.variants and doc.n_requests  # slimmed: the count, not the rows
    sweeps = [p for p in committed("docs/results/*sweep.json") if p.name == "sweep.json"]
    assert len(sweeps) >= 4
    for path in sweeps:
        assert load_sweep(path).levels


def test_another_format_fails_naming_the_file_the_format_and_the_field(tmp_path: Path
                                                                       ) -> None:
    (path,) = [p for p in committed("docs/results/h200/grid.json")]
    doc = json.loads(path.read_text("utf-8"))
    newer = tmp_path / "results.json"
    newer.write_text(json.dumps({**doc, "format": "qwen-latency-lab/results/9"}), "utf-8")
    with pytest.raises(PresetError, match=rf"results.json.*format.*results/9.*{RESULTS_FORMAT}"):
        load_results(newer)
    broken = tmp_path / "broken.json"
    doc["summary"]["variants"]["free"]["n"] = "many"
    broken.write_text(json.dumps(doc), "utf-8")
    with pytest.raises(PresetError,
                       match=r"summary\.variants\.free\.n.*results.json format \(none"):
        load_results(broken)
    other = tmp_path / "bench-sweep.json"
    other.write_text(json.dumps([{"concurrency": 1}]), "utf-8")  # a list: not a sweep.json
    with pytest.raises(PresetError, match=rf"levels: missing.*{SWEEP_FORMAT}"):
        load_sweep(other)
    with pytest.raises(PresetError, match=r"summary: missing"):
        load_results(other)

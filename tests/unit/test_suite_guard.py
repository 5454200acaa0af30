"""The suite's own safety net: one failing test never aborts the run.

CPython 3.11.7 (this box's and CI's interpreter) can crash pytest while it renders a failing
test's traceback: pytest's long format re-parses the test's source with `ast`, and 3.11.7's
AST constructor keeps its recursion depth in state that other work on the interpreter (another
thread's traceback, whose carets also go through `ast`, or a RecursionError the suite provokes
on purpose) can leave unbalanced -- "INTERNALERROR ... SystemError: AST constructor recursion
depth mismatch" (gh-106905, fixed in 3.11.8). pytest then stops: every later test is lost.
pyproject.toml sets `--tb=native`, which renders tracebacks with the `traceback` module and
never re-parses source for pytest's own report. This test runs pytest, under the project's own
configuration, over a file that first provokes the project's deep-nesting errors (a 5,000-deep
YAML preset, a 100,000-deep JSON recording) while another thread formats tracebacks, and
then fails: the run must end in pytest's "1 failed, 1 passed" summary, in the native format.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from playground.settings import REPO_ROOT

FAILING = '''
import gc, threading, traceback
from pathlib import Path

import pytest

from playground.errors import PlaygroundError
from playground.lab import replay
from playground.specs.presets import load_yaml

def churn(stop: threading.Event) -> None:
    """Tracebacks with carets (ast) and cyclic garbage, in a thread of their own. It yields
    the GIL each round: a thread that never sleeps makes every system call of the main thread
    wait out a whole switch interval, and pytest's report then crawls for minutes."""
    while not stop.is_set():
        try:
            {}["missing"]
        except KeyError as e:
            traceback.format_exception(e)
        a = []
        a.append(a)
        gc.collect(0)
        stop.wait(0.001)


def test_deep_nesting_is_refused(tmp_path: Path) -> None:
    deep_yaml = tmp_path / "deep.yaml"
    deep_yaml.write_text("x: " + "[" * 5000 + "]" * 5000)
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 100_000 + "]" * 100_000)
    stop = threading.Event()
    thread = threading.Thread(target=churn, args=(stop,), daemon=True)
    thread.start()
    try:
        for load, path in ((load_yaml, deep_yaml), (replay.load, deep_json)):
            with pytest.raises(PlaygroundError, match="nests deeper"):
                load(path)
    finally:
        stop.set()
        thread.join()


def helper(values: list[int]) -> int:
    return sum(
        v for v in values
        if v > 0
    )


def test_fails_after_the_deep_cases() -> None:
    assert helper([1, 2]) == {
        "three": 3,
    }
'''


def test_a_failing_test_after_deep_nesting_is_reported_not_an_internal_error(
        tmp_path: Path) -> None:
    test_file = tmp_path / "test_guard_target.py"
    test_file.write_text(FAILING, "utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(REPO_ROOT / "pyproject.toml"),
         "--rootdir", str(tmp_path), "-p", "no:cacheprovider", "-q", str(test_file)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    text = out.stdout + out.stderr
    assert "INTERNALERROR" not in text, text[-3000:]
    assert out.returncode == 1, text[-3000:]
    assert "1 failed, 1 passed" in text, text[-3000:]
    # the project's config is what made it safe: tracebacks in Python's native format
    assert "Traceback (most recent call last):" in text, text[-3000:]


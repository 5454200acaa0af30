"""The generator of the Reliability table (tests/reliability.py) refuses partial runs and
fails a row on an error in any phase."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from tests import reliability


def session(**option: Any) -> Any:
    item = SimpleNamespace(nodeid="tests/x.py::t",
                           get_closest_marker=lambda name: object())
    opts = {"keyword": "", "markexpr": "", "deselect": None, "ignore": None,
            "ignore_glob": None, **option}
    return SimpleNamespace(config=SimpleNamespace(args=[], option=SimpleNamespace(**opts)),
                           items=[item], shouldstop=False, shouldfail=False)


@pytest.fixture()
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generator's state for this test only (the real run's rows stay untouched)."""
    monkeypatch.setattr(reliability, "_ROWS", {"tests/x.py::t": {"outcome": "passed"}})
    monkeypatch.setattr(reliability, "_DESELECTED", [])


def test_a_whole_run_is_complete(fresh: None) -> None:
    assert reliability.partial(session()) is None


@pytest.mark.parametrize("option,words", [
    ({"keyword": "stop"}, "-k"), ({"markexpr": "not browser"}, "-m"),
    ({"deselect": ["tests/x.py::t"]}, "--deselect"), ({"ignore": ["tests/browser"]}, "--ignore"),
    ({"ignore_glob": ["*ui*"]}, "--ignore"),
])
def test_every_kind_of_partial_run_is_refused(fresh: None, option: dict, words: str) -> None:
    why = reliability.partial(session(**option))
    assert why is not None and words in why


def test_deselected_stopped_early_or_missing_rows_are_refused(fresh: None) -> None:
    reliability._DESELECTED.append("tests/y.py::u")  # e.g. a plugin deselected it
    assert "deselected" in (reliability.partial(session()) or "")
    reliability._DESELECTED.clear()
    stopped = session()
    stopped.shouldfail = "stopping after 1 failures"
    assert "stopped early" in (reliability.partial(stopped) or "")
    reliability._ROWS.clear()  # the row never ran
    assert "did not run" in (reliability.partial(session()) or "")
    narrow = session()
    narrow.config.args = ["tests/unit"]
    assert "not the whole" in (reliability.partial(narrow) or "")


@pytest.mark.parametrize("phases,outcome", [
    ([("call", "passed")], "passed"),
    ([("call", "passed"), ("teardown", "failed")], "failed"),  # a teardown error fails it
    ([("setup", "failed")], "failed"),
    ([("setup", "skipped")], "skipped"),
    ([("call", "failed"), ("teardown", "failed")], "failed"),
])
def test_a_row_fails_on_an_error_in_any_phase(phases: list, outcome: str) -> None:
    row: dict = {}
    for when, result in phases:
        if when == "call" or result != "passed":  # what the hook passes on
            reliability.record(row, when, result)
    assert row["outcome"] == outcome


def test_a_row_that_says_ui_must_be_a_browser_test() -> None:
    def item(nodeid: str, case: str) -> Any:
        mark = SimpleNamespace(kwargs={"case": case, "where": "stderr"})
        return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: mark)

    reliability.check_rows([item("tests/browser/test_a.py::t", "a fault, in the UI"),
                            item("tests/integration/test_b.py::t", "a fault in the CLI")])
    with pytest.raises(pytest.UsageError, match=r"test_b\.py"):
        reliability.check_rows([item("tests/integration/test_b.py::t", "a fault, in the UI")])


def test_the_table_shows_what_a_test_saw_as_text() -> None:
    page = reliability.table([{"case": "markup <img onerror=x>", "where": "`stderr`",
                               "seen": "<script>x</script> [a](javascript:b) a|b",
                               "outcome": "passed", "order": 1}])
    row = page.splitlines()[-1]
    assert "<" not in row and "&lt;img onerror=x&gt;" in row and "`stderr`" in row
    assert "\\[a\\]" in row and "a\\|b" in row and row.count(" | ") == 3

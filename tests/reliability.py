"""The Reliability table (docs/reliability.md), produced by the test suite itself.

A test marked `@pytest.mark.reliability(case="...", where="...")` is one row: the case tried,
where its message must appear, what the user actually saw (the test hands it to the
`observed` fixture) and whether the test passed. A run of the whole suite writes the table to
.cache/reliability.md (untracked: the test suite writes no tracked file); `scripts/docs.sh`
runs the suite with PLAYGROUND_WRITE_DOCS=1, which also writes docs/reliability.md.

A partial run of any kind (a path narrower than tests/, -k, -m, --deselect, --ignore, a
deselecting plugin, -x/--maxfail stopping early, a row that did not run) writes neither; with
PLAYGROUND_WRITE_DOCS=1 it fails the run and says why. A row fails when its test fails in setup,
call or teardown. A row whose text says the message appears in the UI must be a browser test
(tests/browser/): the text is checked against where the test runs, at collection.
"""

from __future__ import annotations

import html
import os
import re
from collections.abc import Callable
from typing import Any

import pytest

from playground.outputs.fmt import md_text
from playground.settings import REPO_ROOT

_ROWS: dict[str, dict[str, Any]] = {}
_DESELECTED: list[str] = []
UI_WORDS = re.compile(r"\b(UI|browser|page|in the app)\b")


def pytest_deselected(items: list[pytest.Item]) -> None:
    _DESELECTED.extend(i.nodeid for i in items)


def check_rows(items: list[pytest.Item]) -> None:
    """A row that says "UI" is a browser test (where its text says it is tested)."""
    wrong = [f"{i.nodeid}: {m.kwargs['case']!r} / {m.kwargs['where']!r}" for i in items
             if (m := i.get_closest_marker("reliability")) is not None
             and UI_WORDS.search(f"{m.kwargs['case']} {m.kwargs['where']}")
             and not i.nodeid.startswith("tests/browser/")]
    if wrong:
        raise pytest.UsageError("Reliability rows that say UI but are not browser tests "
                                "(tests/browser/):\n  " + "\n  ".join(wrong))


@pytest.fixture()
def observed(request: pytest.FixtureRequest) -> Callable[[str], None]:
    """Call with the message the user sees; it goes into the table's 'seen' column."""
    def note(text: str) -> None:
        row = _ROWS.setdefault(request.node.nodeid, {})
        flat = re.sub(r"/tmp/\S*/", "", " ".join(str(text).split()))  # a test's tmp folders
        row["seen"] = flat[:220]
    return note


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    mark = item.get_closest_marker("reliability")
    if mark is not None and (report.when == "call" or report.outcome != "passed"):
        row = _ROWS.setdefault(item.nodeid, {})
        row.update(case=mark.kwargs["case"], where=mark.kwargs["where"],
                   order=mark.kwargs.get("order", 50))
        record(row, report.when, report.outcome)
    return report


def record(row: dict[str, Any], when: str, outcome: str) -> None:
    """A row's outcome from one phase's report (setup, call, teardown): a failure in any
    phase fails the row, a teardown error included."""
    if outcome != "passed" and row.get("outcome") in ("passed", "failed"):
        row["outcome"] = "failed"
    elif when == "call" or "outcome" not in row:
        row["outcome"] = outcome


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| case | where the message appears | what the user sees (from the test run) "
             "| outcome |", "|---|---|---|---|"]
    for r in sorted(rows, key=lambda r: (r["order"], r["case"])):
        # what a test saw is untrusted text (model output, markup a test injected): shown as
        # text; the row's own words only have < > & escaped (their `code` stays code)
        seen = md_text(r.get("seen", "-"))
        case, where = (html.escape(r[k], quote=False).replace("|", "/") for k in ("case",
                                                                                 "where"))
        ok = {"passed": "pass", "failed": "**FAIL**", "skipped": "skipped"}[r["outcome"]]
        lines.append(f"| {case} | {where} | {seen} | {ok} |")
    return "\n".join(lines)


def partial(session: pytest.Session) -> str | None:
    """Why this run does not cover the whole table (None: it does)."""
    opt = session.config.option
    whole = [str(REPO_ROOT / a) for a in session.config.args] in ([], [str(REPO_ROOT / "tests")])
    marked = [i for i in session.items if i.get_closest_marker("reliability")]
    missing = [i.nodeid for i in marked if "outcome" not in _ROWS.get(i.nodeid, {})]
    reasons = [
        (not whole, f"paths {session.config.args} (not the whole tests/ folder)"),
        (bool(opt.keyword), f"-k {opt.keyword!r}"),
        (bool(opt.markexpr), f"-m {opt.markexpr!r}"),
        (bool(getattr(opt, "deselect", None)), f"--deselect {opt.deselect}"),
        (bool(getattr(opt, "ignore", None) or getattr(opt, "ignore_glob", None)),
         "--ignore / --ignore-glob"),
        (bool(_DESELECTED), f"{len(_DESELECTED)} test(s) deselected"),
        (bool(session.shouldstop or session.shouldfail), "the run stopped early (-x/--maxfail)"),
        (not marked, "no reliability row collected"),
        (bool(missing), f"{len(missing)} row(s) did not run, e.g. {missing[:1]}"),
    ]
    why = [text for bad, text in reasons if bad]
    return "; ".join(why) if why else None


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    marked = [i for i in session.items if i.get_closest_marker("reliability")]
    rows = [_ROWS[i.nodeid] for i in marked if "outcome" in _ROWS.get(i.nodeid, {})]
    why = partial(session)
    if why is not None:
        if os.environ.get("PLAYGROUND_WRITE_DOCS") == "1":
            print(f"\nerror: docs/reliability.md not written: a partial run ({why}); "
                  "scripts/docs.sh needs the whole suite")
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        return
    page = ("# Reliability (generated by the test suite: tests/reliability.py, "
            "`scripts/docs.sh`)\n\n" + table(rows) + "\n")
    cache = REPO_ROOT / ".cache"
    cache.mkdir(exist_ok=True)
    (cache / "reliability.md").write_text(page, "utf-8")
    if os.environ.get("PLAYGROUND_WRITE_DOCS") == "1":
        (REPO_ROOT / "docs" / "reliability.md").write_text(page, "utf-8")

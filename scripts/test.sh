#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs everything, starts the real vLLM test
# servers (inside pytest, once per lane), runs the unit, integration and browser tests in two
# lanes side by side (tests/lanes.py), lints.
# A failing test never stops the run: pytest always reaches its summary line (tracebacks are
# rendered natively -- see pyproject.toml), then the tracked-file check runs either way, and the
# exit code is pytest's (or 1 when the run changed tracked files).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
venv=${PLAYGROUND_VENV:-.venv}
lint=0
"$venv/bin/ruff" check . || lint=$?
before=$(git status --porcelain 2>/dev/null || true)
rc=0
# Two lanes, one pytest-xdist worker each (tests/lanes.py): one lane's waiting is the other's
# working time. `scripts/test.sh -n 0 ...` runs everything in one process.
"$venv/bin/python" -m pytest -n 2 --durations=15 "$@" || rc=$?
# The suite writes no tracked file (generated docs have their own command: scripts/docs.sh).
after=$(git status --porcelain 2>/dev/null || true)
if [ "$before" != "$after" ] && [ "${PLAYGROUND_WRITE_DOCS:-}" != 1 ]; then
  echo "error: the test run changed tracked files:"; diff <(echo "$before") <(echo "$after") || true
  [ "$rc" != 0 ] || rc=1
fi
[ "$lint" = 0 ] || { echo "error: ruff found problems (above)"; [ "$rc" != 0 ] || rc=$lint; }
exit "$rc"

#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs everything, starts the real vLLM test
# server (once, inside pytest), runs unit, integration and browser tests (in that order), lints.
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
"$venv/bin/python" -m pytest --durations=15 "$@" || rc=$?
# The suite writes no tracked file (generated docs have their own command: scripts/docs.sh).
after=$(git status --porcelain 2>/dev/null || true)
if [ "$before" != "$after" ] && [ "${PLAYGROUND_WRITE_DOCS:-}" != 1 ]; then
  echo "error: the test run changed tracked files:"; diff <(echo "$before") <(echo "$after") || true
  [ "$rc" != 0 ] || rc=1
fi
[ "$lint" = 0 ] || { echo "error: ruff found problems (above)"; [ "$rc" != 0 ] || rc=$lint; }
exit "$rc"

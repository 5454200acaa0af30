#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs everything, starts the real vLLM test
# server (once, inside pytest), runs unit, integration and browser tests, lints.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
venv=${PLAYGROUND_VENV:-.venv}
"$venv/bin/ruff" check .
before=$(git status --porcelain 2>/dev/null || true)
"$venv/bin/python" -m pytest "$@"
# The suite writes no tracked file (generated docs have their own command: scripts/docs.sh).
after=$(git status --porcelain 2>/dev/null || true)
if [ "$before" != "$after" ] && [ "${PLAYGROUND_WRITE_DOCS:-}" != 1 ]; then
  echo "error: the test run changed tracked files:"; diff <(echo "$before") <(echo "$after") || true
  exit 1
fi

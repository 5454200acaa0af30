#!/usr/bin/env bash
# The whole test suite from a fresh clone: installs everything, starts the real vLLM test
# server (once, inside pytest), runs unit, integration and browser tests, lints.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh test
venv=${PLAYGROUND_VENV:-.venv}
"$venv/bin/ruff" check .
"$venv/bin/python" -m pytest "$@"

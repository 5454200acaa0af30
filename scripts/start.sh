#!/usr/bin/env bash
# One command from a fresh clone: install, start (or reuse) a local vLLM server, open the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
exec "${PLAYGROUND_VENV:-.venv}/bin/playground" "${@:-ui}"

#!/usr/bin/env bash
# Regenerates the generated docs: docs/reliability.md (the Reliability table, from a full run
# of the test suite). The README's test command writes no tracked file; this one does.
set -euo pipefail
cd "$(dirname "$0")/.."
PLAYGROUND_WRITE_DOCS=1 scripts/test.sh "$@"
git status --short docs/

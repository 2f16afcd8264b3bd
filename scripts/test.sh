#!/usr/bin/env bash
# Set up, then run the test suite.   ./scripts/test.sh          fast tier (CI)
#                                    ./scripts/test.sh --slow   slow tier (real SmolLM2-135M)
# Other arguments are passed to pytest.
set -euo pipefail
source "$(dirname "$0")/_prepare.sh"
if [ "${1:-}" = "--slow" ]; then
  shift
  exec python -m pytest -m slow "$@"
fi
exec python -m pytest "$@"

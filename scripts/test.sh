#!/usr/bin/env bash
# Set up, then run the test suite.   ./scripts/test.sh          fast tier (CI)
#                                    ./scripts/test.sh --slow   slow tier (real SmolLM2-135M)
# Other arguments are passed to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
VENV="${VENV:-.venv}"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1  # tests never reach the Hub
if [ "${1:-}" = "--slow" ]; then
  shift
  exec python -m pytest -m slow "$@"
fi
exec python -m pytest "$@"

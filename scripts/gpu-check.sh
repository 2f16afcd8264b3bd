#!/usr/bin/env bash
# Everything this project measures on a GPU, in one command, on a lent GPU machine with no network.
#
#   ./scripts/gpu-check.sh [--quick] [--out DIR] [--only PART,...]    on the GPU machine
#   ./scripts/gpu-check.sh --dry-run [--quick]                        anywhere: list what would run
#
# First, on a machine with PyPI: ./scripts/gpu-wheels.sh (fills .gpu-wheels/, which must travel
# with the checkout). Here the carried wheels are installed into a private folder next to the
# machine's own PyTorch, and this checkout is imported as it is (edits made after the wheels were
# fetched are what runs). Then scripts/gpu_check.py runs the parts (CUDA tests, kernel speed,
# every method's speed, a bf16 training step), each under a time cap, and writes gpu-report.md,
# gpu-report.json, gpu-logs.txt and cuda-tests.xml to --out (default $OUT, else ./gpu-report).
# A lent machine runs one command for at most 10 minutes: split the full run with --only, e.g.
# --only cuda-tests, then --only kernel-resources,kernel-speed, then --only method-speed, then
# --only landmark-paths,recall-speed,retrieval-speed,train-step.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
PYTHON="${PYTHON:-python3}"

for arg in "$@"; do
  if [ "$arg" = "--dry-run" ]; then
    exec "$PYTHON" scripts/gpu_check.py "$@"
  fi
done

# Arguments and parts checked before anything is installed (one message for a typo).
"$PYTHON" scripts/gpu_check.py --dry-run "$@" >/dev/null
WHEELS="${GPU_WHEELS:-.gpu-wheels}"
SITE="${GPU_SITE:-/tmp/lm-eval-longmem-site}"
if ! ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  echo "error: no wheels in $WHEELS: run ./scripts/gpu-wheels.sh on a machine with PyPI and carry $WHEELS" >&2
  exit 2
fi
if ! "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  echo "error: no CUDA device for $PYTHON here; this runs on a GPU machine (--dry-run lists the plan anywhere)" >&2
  exit 2
fi
WHEELS_PYTHON="$(cat "$WHEELS/PYTHON_VERSION" 2>/dev/null || true)"  # written by gpu-wheels.sh
if [ "$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$WHEELS_PYTHON" ]; then
  echo "error: the wheels in $WHEELS are for Python ${WHEELS_PYTHON:-unknown}; $PYTHON is another (set PYTHON=, or fetch again)" >&2
  exit 2
fi

"$PYTHON" -m pip install -q --disable-pip-version-check --no-index --no-deps --no-compile --no-cache-dir \
  --upgrade --target "$SITE" "$WHEELS"/*.whl
# The training package is the checkout's training/ folder under its installed name (as an
# editable install makes it), and the start-up hook teaches the stock lm_eval CLI our model.
mkdir -p "$SITE/lm_eval_longmem_training"
cat > "$SITE/lm_eval_longmem_training/__init__.py" <<EOF
__path__ = ["$REPO/training"]
exec(compile(open(__path__[0] + "/__init__.py", encoding="utf-8").read(), __path__[0] + "/__init__.py", "exec"))
EOF
cp lm_eval_longmem/harness/_startup/lm_eval_longmem_autoload.pth "$SITE/"
# $SITE as a site directory (its .pth files run), after the machine's own packages.
SITE_PACKAGES="$("$PYTHON" -c 'import site; print(site.getsitepackages()[0])')"
echo "import site; site.addsitedir('$SITE')" > "$SITE_PACKAGES/lm_eval_longmem_gpu_site.pth"
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}" PATH="$SITE/bin:$PATH"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
unset TRITON_INTERPRET
exec "$PYTHON" scripts/gpu_check.py "$@"

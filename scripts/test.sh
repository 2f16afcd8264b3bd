#!/usr/bin/env bash
# Set up, then run the test suite.   ./scripts/test.sh          fast tier (CI)
#                                    ./scripts/test.sh --slow   slow tier (real SmolLM2-135M)
# Other arguments are passed to pytest, in both runs.
# The fast tier starts with ruff (lint, import order, format: configured in pyproject.toml).
# Each tier runs in .venv (the base install: the newest transformers), then its tests marked
# transformers_surface (the files tests/conftest.py lists, and every kvpress test)
# run again in .venv-kvpress (SETUP_EXTRAS=dev,kvpress: kvpress 0.5.5 caps transformers below
# 5.3, so that venv resolves transformers 5.2.x). The exit status fails when any step fails.
# KVPRESS_RUN=0 skips the second run (a quick local check; CI always runs both).
set -euo pipefail
# The second venv is set up in the background while .venv is: on two cores the pair takes about
# as long as one. Then, still in the background, its tier is collected once: a fresh venv has no
# bytecode (setup.sh installs without it), and this writes it for what the tier imports while the
# foreground leaves a core idle (its pytest start-up), instead of in both of the tier's workers.
KVPRESS_SETUP_LOG=""
if [ "${KVPRESS_RUN:-1}" != 0 ]; then
  KVPRESS_SETUP_LOG="$(mktemp)"
  (
    cd "$(dirname "$0")/.."
    VENV=.venv-kvpress SETUP_EXTRAS=dev,kvpress ./scripts/setup.sh
    (unset PYTHONDONTWRITEBYTECODE && HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 .venv-kvpress/bin/python -m pytest \
      -q -p no:cacheprovider --collect-only -m "not slow and transformers_surface" --surface-files-only >/dev/null 2>&1) ||
      true
  ) >"$KVPRESS_SETUP_LOG" 2>&1 &
  KVPRESS_SETUP_PID=$!
fi
source "$(dirname "$0")/_prepare.sh"
SLOW=0
if [ "${1:-}" = "--slow" ]; then
  SLOW=1
  shift
fi
# run_tier [MARK_EXPRESSION] -- [pytest arguments]: the tier, narrowed to MARK_EXPRESSION if given.
run_tier() {
  local only="$1"
  shift 2
  if [ "$SLOW" = 1 ]; then
    python -m pytest -m "slow${only:+ and $only}" "$@"
  else
    # The fast tier in parallel, one worker per core up to 4 (measured on 2 cores before the
    # task-index cache: 8.0 min with two workers, 14.5 min in one process). Pass -n 0 to run it
    # in one process. Work stealing: a worker that runs out takes queued tests from the other, so
    # a few long lm_eval processes no longer leave one core idle at the end (2 cores: 4:51 with
    # xdist's default chunks, 3:55 with stealing).
    python -m pytest -n "$(python -c 'import os; print(max(1, min(4, len(os.sched_getaffinity(0)))))')" --dist worksteal \
      ${only:+-m "not slow and $only"} "$@"
  fi
}
status=0
if [ "$SLOW" = 0 ]; then
  echo "=== ruff: lint, import order, format ==="
  { ruff check . && ruff format --check .; } || status=$?
fi
tier_status=0
run_tier "" -- "$@" || tier_status=$?
[ "$status" != 0 ] || status=$tier_status
if [ "${KVPRESS_RUN:-1}" != 0 ]; then
  # A subshell (its own VENV, PATH), not under `||`, which would switch off set -e inside it:
  # a failed setup must stop this run, never fall back to .venv's python on PATH.
  set +e
  if ! wait "$KVPRESS_SETUP_PID"; then
    # its output, then the foreground setup below tries again and stops this step with its error
    echo "=== setting up .venv-kvpress in the background failed: ==="
    cat "$KVPRESS_SETUP_LOG"
  fi
  rm -f "$KVPRESS_SETUP_LOG"
  (
    set -e
    export VENV=.venv-kvpress SETUP_EXTRAS=dev,kvpress
    source scripts/_prepare.sh
    python -c 'import sys; from importlib.metadata import version as v; k, t = v("kvpress"), v("transformers")
print(f"=== the transformers_surface tests again in {sys.prefix}, the kvpress extra: kvpress {k}, transformers {t} ===")'
    run_tier transformers_surface -- --surface-files-only "$@"
  )
  kvpress_status=$?
  set -e
  [ "$status" != 0 ] || status=$kvpress_status
fi
exit "$status"

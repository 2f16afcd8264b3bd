#!/usr/bin/env bash
# Set up, then run the main job offline: the forgetting curve of the embedded default model
# (SmolLM2-135M-Instruct) on the embedded corpus, through the stock `lm_eval` command,
# and draw it. Writes demo_output/ (lm-eval results JSON + forgetting_curve.png).
# Sized for under 5 minutes on 2 CPU cores from a fresh clone, setup included: 6 lengths from
# 8 to 1024 tokens (log-spaced), 4 samples each, i.e. 48 forward passes of at most 2049 tokens
# (a 2048-token length would double the run: its 4097-token inputs cost ~3x a 2049-token one).
# FULL=1 runs the paper's protocol (32 linear lengths up to the model's limit, 10 samples each:
# hours on a CPU).
set -euo pipefail
export SETUP_EXTRAS="${SETUP_EXTRAS:-demo}"  # no Triton/pytest for the demo (a dev setup also does)
source "$(dirname "$0")/_prepare.sh"

if [ "${FULL:-0}" = "1" ]; then
  PROTOCOL=(fc_corpus=shakespeare)
else
  PROTOCOL=(fc_corpus=shakespeare fc_granularity=log fc_points=6 fc_max_length=1024 fc_samples=4)
fi
lm_eval --model longmem --model_args method=vanilla --device cpu \
  --tasks forgetting_curve --metadata "${PROTOCOL[@]}" \
  --output_path demo_output
lm-eval-longmem plot demo_output -o demo_output/forgetting_curve.png

#!/usr/bin/env bash
# Set up, then run the main job offline: the forgetting curve of the embedded default model
# (SmolLM2-135M-Instruct) on the embedded corpus, through the stock `lm_eval` command,
# and draw it. Writes demo_output/ (lm-eval results JSON + forgetting_curve.png).
# The demo is sized for ~5 minutes on 2 CPU cores; FULL=1 runs the paper's protocol
# (32 linear lengths up to the model's limit, 10 samples each: hours on a CPU).
set -euo pipefail
source "$(dirname "$0")/_prepare.sh"

if [ "${FULL:-0}" = "1" ]; then
  PROTOCOL=(fc_corpus=shakespeare)
else
  PROTOCOL=(fc_corpus=shakespeare fc_granularity=log fc_points=9 fc_max_length=2048 fc_samples=4)
fi
lm_eval --model longmem --model_args method=vanilla --device cpu \
  --tasks forgetting_curve --metadata "${PROTOCOL[@]}" \
  --output_path demo_output
lm-eval-longmem plot demo_output -o demo_output/forgetting_curve.png

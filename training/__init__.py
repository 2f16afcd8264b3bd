"""lm-eval-longmem's training module, installed as `lm_eval_longmem_training`.

Continues pretraining a model so a long-memory method works beyond the base length, and exports
a checkpoint that `lm_eval --model longmem --model_args pretrained=<dir>` loads by itself.
Run it as `lm-eval-longmem train RECIPE [key=value ...]` or
`accelerate launch -m lm_eval_longmem_training RECIPE [key=value ...]`.
"""

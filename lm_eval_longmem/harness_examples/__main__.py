"""`python -m lm_eval_longmem.harness_examples` prints the folder, for `--include_path "$(...)"`."""

from lm_eval_longmem.harness_examples import HARNESS_EXAMPLES_DIR

print(HARNESS_EXAMPLES_DIR)

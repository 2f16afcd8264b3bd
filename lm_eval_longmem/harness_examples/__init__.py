"""Task YAMLs that combine our tasks with lm-eval's built-in long-context tasks.

Not on lm-eval's task path by default (their built-in members need datasets and extras that an
offline install lacks); pass the folder with `--include_path`, or copy a file and edit it:

    lm_eval --include_path "$(python -m lm_eval_longmem.harness_examples)" --tasks longmem_with_builtins ...
"""

from pathlib import Path

HARNESS_EXAMPLES_DIR = Path(__file__).resolve().parent

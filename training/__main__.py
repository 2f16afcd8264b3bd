"""`python -m lm_eval_longmem_training` / `accelerate launch -m lm_eval_longmem_training`."""

import sys

from lm_eval_longmem.errors import exit_status_if_interrupted

from .cli import main

sys.exit(exit_status_if_interrupted(main))

"""`python -m lm_eval_longmem_training` / `accelerate launch -m lm_eval_longmem_training`."""

import sys

from lm_eval_longmem_training.cli import main

sys.exit(main())

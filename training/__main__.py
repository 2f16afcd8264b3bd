"""`python -m lm_eval_longmem_training` / `accelerate launch -m lm_eval_longmem_training`."""

import sys

from .cli import main

sys.exit(main())

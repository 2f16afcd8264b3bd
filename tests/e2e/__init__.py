"""End-to-end tests: the real `lm_eval` / `lm-eval-longmem` commands run in a subprocess, as a user runs them."""

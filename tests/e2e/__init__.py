"""End-to-end tests: the real `lm_eval` / `lm-eval-longmem` commands, as a user runs them: `lm_eval`
as a fork of a process that has already imported torch, transformers and lm-eval
(tests/helpers/warm_commands.py), a few runs and `lm-eval-longmem` in a new process."""

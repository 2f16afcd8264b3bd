"""How the plugin meets lm-eval: the start-up hook, registration, the checks before a run,
run naming, log filtering, the task-index cache and the task metadata the default model implies.

Nothing here is imported at start-up except `startup` (which imports only `os` and `sys`) and,
in the lm-eval CLI, `lm_eval_patches` (the table of what the plugin changes in lm-eval); the rest
loads when the lm-eval CLI (or `lm_eval_longmem.register()`) needs it.
"""

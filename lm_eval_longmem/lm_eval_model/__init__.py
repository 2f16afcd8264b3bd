"""The lm-eval model: `LongMemLM`, what lm-eval instantiates for `--model longmem`, with the plan
it prints before a run and the `--use_cache` databases it keeps apart per fingerprint."""

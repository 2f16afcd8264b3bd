"""Tests of the `LongMemLM` wrapper lm-eval loads as `--model longmem`, its cost plan and its request cache."""

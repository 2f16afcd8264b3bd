"""Tests of `lm-eval-longmem sweep`."""

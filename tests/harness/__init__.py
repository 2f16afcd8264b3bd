"""Tests of the lm-eval glue: start-up hook, registration, start-up checks, run names, task index cache, quiet."""

"""Corpora and token streams shared by the tasks and training."""

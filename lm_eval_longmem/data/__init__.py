"""Corpora and token streams shared by the tasks (and, later, training)."""

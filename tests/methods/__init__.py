"""Tests of each long-memory method, and of the method registry, its typed arguments and resolution."""

"""Tests of the shared foundations: atomic files, damaged caches, typed values (fuzzed)."""

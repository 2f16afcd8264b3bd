"""Tests that keep the benchmark scripts (and the GPU check that runs them) from rotting, at tiny sizes on the CPU."""

"""Tests of the model machinery: scoring, generation, bounded caches, compressive memory, the FoX model."""

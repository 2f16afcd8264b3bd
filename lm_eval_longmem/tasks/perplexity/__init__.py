"""Perplexity by context length and the per-position loss curve (`longmem_perplexity`)."""

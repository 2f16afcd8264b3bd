"""Passkey retrieval (landmark attention; Infini-attention appendix B): find a number in filler."""

"""Training data: text sources, packing into fixed-length chunks, and the order chunks are read in."""

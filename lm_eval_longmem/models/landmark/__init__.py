"""Landmark Attention's machinery (Mohtashami & Jaggi 2023): landmark insertion, windows, the
per-layer block store, block retrieval with slot positions, and the scorer and generator that run
a sequence through them. `methods/landmark.py` declares the method; training reuses the layout."""

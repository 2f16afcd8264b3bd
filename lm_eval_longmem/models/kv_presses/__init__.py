"""NVIDIA's kvpress presses run through `--model longmem` (`method=kvpress`).

catalogue.py reads the presses and their arguments from kvpress itself; pressed_sequence.py
prefills a request's context under a press and feeds the rest against the compressed cache, the
sequence the shared scorer and generator (`models/runtime/`) run requests through. kvpress is imported only
when a press is used: the base install does not depend on it.
"""

"""NVIDIA's kvpress presses run through `--model longmem` (`method=kvpress`).

catalogue.py reads the presses and their arguments from kvpress itself; pressed_sequence.py
prefills a request's context under a press and feeds the rest against the compressed cache;
scorer.py and generator.py are the two request types built on it. kvpress is imported only
when a press is used: the base install does not depend on it.
"""

"""A CPU stand-in for "this method's hot path would run with its model on a GPU".

On a GPU a tensor made without `device=` lands on the CPU, away from the model, and one made
without `dtype=` takes the global default, which transformers itself changes while it loads a
model. Neither shows on a CPU-only machine, where every default is right by accident. Inside
`guarded(...)` the defaults are wrong on purpose: new tensors go to the meta device (no data, so a
meta tensor meeting the model's CPU tensors, or being read, fails at the line that made it) and
floats default to float64 (a float64 tensor meeting float32 activations either fails, as in
`index_add_` and `scatter`, or changes the result). A method whose hot path names the device and
dtype of everything it makes runs the same, bit for bit.

Host work done on purpose (a few RoPE frequencies computed once per new length) says so with
`with torch.device("cpu"):`, which overrides the guard.

Why not the whole scoring under `torch.set_default_device("meta")` or fake tensors: the wrapper
builds each batch on the host and copies it once (`batch.to(device)`), and methods read values
back (`.item()`, top-k indices) to decide what to do, which meta and fake tensors cannot give.
So the guard covers what runs between those points: the scorer and the generator.
"""

from __future__ import annotations

import contextlib
import functools

import torch


@contextlib.contextmanager
def wrong_defaults():
    """New tensors default to the meta device and to float64 while inside."""
    dtype = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        with torch.device("meta"):
            yield
    finally:
        torch.set_default_dtype(dtype)


def guarded(fn):
    """`fn` run under `wrong_defaults()`."""

    @functools.wraps(fn)
    def inner(*args, **kwargs):
        with wrong_defaults():
            return fn(*args, **kwargs)

    return inner


@contextlib.contextmanager
def hot_path_guarded(lm):
    """A `LongMemLM` whose scorer and generators run under `wrong_defaults()` while inside."""
    scorer, make_generator = lm.scorer, lm._make_generator
    score = scorer.score

    def make_guarded_generator():
        generator = make_generator()
        generator.generate = guarded(generator.generate)
        return generator

    scorer.score, lm._make_generator = guarded(score), make_guarded_generator
    try:
        yield lm
    finally:
        del scorer.score, lm._make_generator  # the class's methods again

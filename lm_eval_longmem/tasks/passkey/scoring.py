r"""Scoring: correct iff the first integer in the generated text equals the key.

The landmark-attention code reads `int(re.search(r"\d+", response).group())`: the first run
of digits anywhere in the answer, so "The pass key is 123." gives 123 and "12a3" gives 12.
An answer with no digit is wrong.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"\d+")


def first_integer(text: str) -> int | None:
    match = _DIGITS.search(text)
    return int(match.group()) if match else None


def is_correct(generated: str, key: int) -> bool:
    return first_integer(generated) == int(key)

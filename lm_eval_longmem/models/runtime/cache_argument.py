"""The name transformers gives the KV cache, as an argument and as an output field.

transformers 5.24 renamed `past_key_values` to `cache` in every model's `forward`, in `generate`
and in the outputs; the old name still works there with a deprecation warning, and is due to be
removed in 5.40, inside the `<6` range this package supports, while 5.2 (what the kvpress extra
resolves) knows only the old one. Every call that hands a model a cache, or reads one back,
goes through this module, so one check of the installed version decides the name.
"""

from __future__ import annotations

from typing import Any

from transformers.modeling_outputs import BaseModelOutputWithPast

CACHE_FIELD = "cache" if "cache" in BaseModelOutputWithPast.__dataclass_fields__ else "past_key_values"


def cache_argument(cache) -> dict[str, Any]:
    """`model(..., **cache_argument(cache))`: the cache under the installed version's name."""
    return {CACHE_FIELD: cache}


def cache_of(output):
    """The cache a model's (or `generate`'s) output returns, under the installed version's name."""
    return getattr(output, CACHE_FIELD)

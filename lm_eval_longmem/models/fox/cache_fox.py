"""The decoding cache of FoX, as a transformers 5 `Cache` whose layers hold FoX's state.

Per layer it keeps what attention reads for past tokens, in the layout the kernel takes:

* keys, values `[B, T, H, D]`, after KV-shift, QK-norm and RoPE (as attention used them);
* `cum_log_fgate [B, T, H]` fp32, `c_t = sum_{s<=t} log f_s`, so a step with new queries calls
  `biased_attention(q, K, V, c[:, -Tq:], c)` and extends `c` from its last value;
* with KV-shift, the pre-shift projections `[B, T, H*D]` of every cached token. Only the last
  one is needed to decode, but keeping them all makes `crop` exact (the shift state after a crop
  is the projection of the new last token), which prefix reuse relies on.

A generic cache that is still empty (e.g. the `DynamicCache(config=...)` that `generate` or a
prefix-reuse loop creates) is adopted in place by `as_fox_cache`: its layers are replaced by FoX
layers, so the caller's reference stays the one that holds the state.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, CacheLayerMixin

_PER_TOKEN_STATES = ("keys", "values", "cum_log_fgate", "key_inputs", "value_inputs")


class ForgettingAttentionCacheLayer(CacheLayerMixin):
    """One FoX layer's cached keys, values, cumulative log forget gates and shift inputs."""

    is_croppable = True
    is_compileable = False

    def __init__(self, **kwargs):
        super().__init__()
        self.cum_log_fgate: torch.Tensor | None = None
        self.key_inputs: torch.Tensor | None = None
        self.value_inputs: torch.Tensor | None = None
        self.device = None
        self.dtype = None

    def _states(self) -> dict[str, torch.Tensor]:
        return {name: getattr(self, name) for name in _PER_TOKEN_STATES if getattr(self, name) is not None}

    def _map_states(self, fn) -> None:
        for name, tensor in self._states().items():
            setattr(self, name, fn(tensor))

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device, self.dtype = key_states.device, key_states.dtype
        self.is_initialized = True

    def update(
        self,
        key_states: torch.Tensor,
        value_states: torch.Tensor,
        cum_log_fgate: torch.Tensor | None = None,
        key_inputs: torch.Tensor | None = None,
        value_inputs: torch.Tensor | None = None,
        **kwargs,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Append new tokens (time is dim 1 everywhere); return all keys, values and `c`."""
        if cum_log_fgate is None:
            raise ValueError("a FoX cache layer needs the new tokens' cumulative log forget gates")
        new = {
            "keys": key_states,
            "values": value_states,
            "cum_log_fgate": cum_log_fgate,
            "key_inputs": key_inputs,
            "value_inputs": value_inputs,
        }
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
            for name, tensor in new.items():
                setattr(self, name, tensor)
        else:
            for name, tensor in new.items():
                old = getattr(self, name)
                if (old is None) != (tensor is None):
                    raise ValueError(f"cache state {name!r} was {'absent' if old is None else 'present'} before")
                if tensor is not None:
                    setattr(self, name, torch.cat([old, tensor], dim=1))
        return self.keys, self.values, self.cum_log_fgate

    def last_cum_log_fgate(self) -> torch.Tensor | None:
        """`c` of the last cached token `[B, 1, H]`, the offset of the next tokens' `c`."""
        return None if not self.get_seq_length() else self.cum_log_fgate[:, -1:]

    def last_inputs(self) -> tuple[torch.Tensor | None, torch.Tensor | None]:
        """Pre-shift key and value projections of the last cached token, `[B, H*D]` each."""
        if not self.get_seq_length():
            return None, None
        last = [None if t is None else t[:, -1] for t in (self.key_inputs, self.value_inputs)]
        return last[0], last[1]

    def get_seq_length(self) -> int:
        return 0 if self.keys is None else self.keys.shape[1]

    def get_max_length(self) -> int:
        return -1

    def get_max_cache_shape(self) -> int:
        return -1

    def get_mask_sizes(self, query_length: int) -> tuple[int, int]:
        return self.get_seq_length() + query_length, 0

    def crop(self, tokens_to_remove: int) -> None:
        """Negative: drop that many of the last tokens. Non-negative: keep that many (the older
        transformers meaning of `crop(max_length)`)."""
        length = self.get_seq_length()
        keep = length + tokens_to_remove if tokens_to_remove < 0 else min(tokens_to_remove, length)
        if keep < 0:
            raise ValueError(f"cannot remove {-tokens_to_remove} tokens from a cache of {length}")
        self._map_states(lambda t: t[:, :keep])

    def reset(self) -> None:
        self._map_states(torch.zeros_like)

    def batch_repeat_interleave(self, repeats: int) -> None:
        self._map_states(lambda t: t.repeat_interleave(repeats, dim=0))

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self._map_states(lambda t: t[indices])

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        self._map_states(lambda t: t.index_select(0, beam_idx.to(t.device)))

    def offload(self):
        self._map_states(lambda t: t.to("cpu", non_blocking=True))

    def prefetch(self):
        if self.device is not None:
            self._map_states(lambda t: t.to(self.device, non_blocking=True))

    @property
    def batch_size(self) -> int:
        return -1 if self.keys is None else self.keys.shape[0]


class ForgettingTransformerCache(Cache):
    """A `Cache` with one `ForgettingAttentionCacheLayer` per FoX block.

    `ForgettingTransformerCache(config=model.config)` (or `num_layers=`) is a drop-in for
    `DynamicCache(config=...)`; `crop`, `get_seq_length`, `batch_select_indices`, `reorder_cache`
    and `batch_repeat_interleave` work as on a `DynamicCache`.
    """

    def __init__(self, config=None, num_layers: int | None = None, **kwargs):
        if num_layers is None and config is not None:
            num_layers = config.num_hidden_layers
        if num_layers is None:
            super().__init__(layer_class_to_replicate=ForgettingAttentionCacheLayer)
        else:
            super().__init__(layers=[ForgettingAttentionCacheLayer() for _ in range(num_layers)])


def as_fox_cache(cache: Cache, num_layers: int) -> Cache:
    """`cache` with `num_layers` FoX layers; an empty generic cache is converted in place."""
    layers = cache.layers
    if all(isinstance(layer, ForgettingAttentionCacheLayer) for layer in layers):
        layers.extend(ForgettingAttentionCacheLayer() for _ in range(num_layers - len(layers)))
        return cache
    if cache.get_seq_length() > 0 or any(getattr(layer, "is_initialized", False) for layer in layers):
        raise TypeError(
            f"a FoX model cannot continue from a {type(cache).__name__} filled by another model; pass an empty "
            "cache or a ForgettingTransformerCache"
        )
    layers[:] = [ForgettingAttentionCacheLayer() for _ in range(num_layers)]
    if hasattr(cache, "layer_class_to_replicate"):
        cache.layer_class_to_replicate = None
    return cache

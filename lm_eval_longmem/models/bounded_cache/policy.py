"""What distinguishes one bounded-cache method from another: a small policy object.

The runner owns the model loop; a policy only answers two questions, per layer:
* `window`: which stored entries does this chunk's attention see? (all of them, except for
  LongCache, which keeps every entry and recalls a few by query-key relevance);
* `shrink`: the cache must lose `remove` entries; which ones go, and how? (StreamingLLM evicts
  the oldest non-sink entries; stated-CLM merges adjacent pairs using the chunk's gradients and
  the attention each entry received, handed over as `Evidence` when `needs_evidence`).
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import torch

from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache


@dataclass(frozen=True)
class BudgetArgs:
    """Arguments every bounded-cache method shares (stated-CLM paper, appendix B, Table 3)."""

    sink_length: int = field(default=32, metadata={"help": "first entries that are never evicted or merged"})
    max_context_length: int = field(
        default=4096, metadata={"help": "cache budget: entries kept between chunks (the paper's max_context_length)"}
    )
    chunk_size: int = field(
        default=512, metadata={"help": "tokens processed per step; the cache is shrunk once per chunk"}
    )

    def __post_init__(self):
        if self.sink_length < 0 or self.chunk_size < 1:
            raise ValueError("sink_length must be >= 0 and chunk_size >= 1")
        if self.max_context_length - self.sink_length - 1 < self.chunk_size:
            raise ValueError(
                f"max_context_length ({self.max_context_length}) must exceed sink_length + chunk_size "
                f"({self.sink_length} + {self.chunk_size}): each step removes chunk_size entries from the "
                f"part of the cache after the sinks. "
                f"{budget_fix(self.max_context_length, self.sink_length, self.chunk_size)}"
            )

    def budget_fields(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(BudgetArgs)}


def budget_fix(max_context_length: int, sink_length: int, chunk_size: int) -> str:
    """The arguments that would make a budget work: the largest power-of-two chunk_size that fits
    under max_context_length (a round size, as the paper's 512 of 4096), or the budget the chunk needs."""
    needed = sink_length + chunk_size + 1
    room = max_context_length - sink_length - 1  # the largest chunk_size that fits
    if room < 1:
        return f"Fix: max_context_length={needed} or more (no chunk_size fits beside sink_length={sink_length})."
    fitting = 1 << (room.bit_length() - 1)
    return (
        f"Fix: chunk_size={fitting} (the largest power of two that fits; any chunk_size up to {room} "
        f"does), or max_context_length={needed} or more."
    )


@dataclass
class Evidence:
    """What the chunk that triggered a shrink says about the stored entries of one layer."""

    key_grad: torch.Tensor  # [Hkv, N, d], d(chunk LM loss)/d(pre-RoPE keys)
    value_grad: torch.Tensor  # [Hkv, N, d]
    received: torch.Tensor  # [N], attention received, summed over the chunk's queries and heads


class CachePolicy(ABC):
    name: str = "bounded"
    needs_evidence: bool = False  # run the chunk with gradients and attention bookkeeping before a shrink
    keeps_everything: bool = False  # never shrink; `window` bounds what attention sees instead
    unit_counts: bool = True  # every entry stands for one token (no merging): layers share one attention bias
    spares_new_entries: bool = False  # shrink removes only older entries: it may run after the chunk is appended

    def __init__(self, args: BudgetArgs):
        self.args = args

    @property
    def budget(self) -> int:
        return self.args.max_context_length

    def window(self, layer_index: int, cache: LayerCache, queries: torch.Tensor) -> LayerCache:
        """The entries this chunk attends to, in order (queries: pre-RoPE [H, c, d])."""
        return cache

    @abstractmethod
    def shrink(self, cache: LayerCache, remove: int, evidence: Evidence | None) -> LayerCache:
        """The cache with `remove` fewer entries (evidence: set when `needs_evidence`)."""

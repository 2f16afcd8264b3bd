"""Landmark Attention's retrieval attention for many windows at once: the PyTorch path (the reference)
and the dispatch to the Triton kernel (`retrieval_triton.py`) on a GPU and to a C function
(`retrieval_cpu.py`) on the CPU, which both read the chosen blocks where they lie.

Every query reads two things under one grouped softmax (`reference.py`): the k blocks it chose,
fetched from a block store by index (as paged attention reads pages), and its own window up to
itself. The windows are consecutive runs of W positions of one row, each starting on a block
boundary, so a window's landmarks are its positions W-relative ``B - 1, 2B - 1, ...``.

Arguments (H query heads reading Hkv key-value heads, query head h reads h // (H // Hkv)):

* ``slot_queries [H, N, k, d]``: each query rotated for each of its slots (the retrieved keys are
  stored rotated by their offset in the block, so the query carries the slot's position);
* ``window_queries [H, N, d]``, ``window_keys``, ``window_values [Hkv, N, d]`` (rotated at their
  places in the window; N is a multiple of W);
* ``store_keys``, ``store_values [Hkv, n, B, d]``: the block store, landmarks last in each block;
* ``chosen [H, N, k]`` block indices and ``slot_valid [H, N, k]``: a query with fewer than k
  blocks to choose from leaves the rest of its slots invalid; an invalid slot reads nothing.

Scores are ``soft_cap(q.k * scaling)`` computed in the inputs' dtype and turned to float32 before
the softmax, as the window-by-window sequence does. This path gathers the chosen blocks, so it
goes through the windows in pieces whose gather fits `GATHER_BUDGET_BYTES` (whole windows, or runs
of a window's blocks where one window does not fit); the Triton kernel reads the blocks where they lie.
"""

from __future__ import annotations

import importlib.util
import os

import torch
import torch.nn.functional as F

from .dispatch import grouped_softmax
from .retrieval_cpu import cpu_retrieval_attention, cpu_unavailable_reason

# Memory the chosen blocks' keys and values may take at once ([2, H, windows, W, k, B, d]). On the
# CPU a gather that falls out of the caches costs more than the ops it saves (a 2-layer Llama of
# hidden 256, blocks of 64, top_k 5, 2,080 tokens: 9.3 s with pieces of 256 MiB, against 3.9 s
# window by window), so pieces there stay small, and are written into one reused buffer: a fresh
# gather that large is returned to the system and page-faulted back in on every piece.
GATHER_BUDGET_BYTES = 512 * 2**20
CPU_GATHER_BUDGET_BYTES = 32 * 2**20


def soft_cap(logits: torch.Tensor, cap: float | None) -> torch.Tensor:
    return logits if not cap else torch.tanh(logits / cap) * cap


def retrieval_attention(
    slot_queries: torch.Tensor,
    window_queries: torch.Tensor,
    window_keys: torch.Tensor,
    window_values: torch.Tensor,
    store_keys: torch.Tensor,
    store_values: torch.Tensor,
    chosen: torch.Tensor,
    slot_valid: torch.Tensor,
    window: int,
    scaling: float,
    softcap: float | None = None,
    *,
    backend: str = "auto",
) -> torch.Tensor:
    """Attention output [H, N, d] (see the module docstring). backend: "auto" (without gradients, the
    Triton kernel for CUDA tensors and the C function for float32 CPU tensors; else PyTorch),
    "triton", "c" or "torch"."""
    arguments = (slot_queries, window_queries, window_keys, window_values, store_keys, store_values, chosen, slot_valid)
    path = _path(backend, arguments)
    if path == "triton":
        from .retrieval_triton import triton_retrieval_attention

        return triton_retrieval_attention(*arguments, window, scaling, softcap)
    if path == "c":
        return cpu_retrieval_attention(*arguments, window, scaling, softcap)
    heads, length, k, dim = slot_queries.shape
    block_size = store_keys.shape[2]
    if length % window or window % block_size:
        raise ValueError(f"{length} queries are not whole windows of {window} in blocks of {block_size}")
    store = torch.stack([store_keys, store_values]).flatten(1, 2)  # [2, Hkv * n, B, d]: one gather for both
    per_query = 2 * heads * k * block_size * dim * store_keys.element_size()
    budget = GATHER_BUDGET_BYTES if store.is_cuda else CPU_GATHER_BUDGET_BYTES
    reusable = not (torch.is_grad_enabled() and store.requires_grad)  # out= takes no part in autograd
    pieces, buffer = [], None
    for queries, keys, piece_windows in _pieces(length, window, block_size, max(1, budget // max(per_query, 1))):
        if buffer is None and reusable and k:  # the first piece is the largest
            buffer = store.new_empty(2 * heads * (queries.stop - queries.start) * k * block_size * dim)
        pieces.append(
            _windows(
                slot_queries[:, queries],
                window_queries[:, queries],
                window_keys[:, keys],
                window_values[:, keys],
                store,
                store_keys.shape[1],
                chosen[:, queries],
                slot_valid[:, queries],
                piece_windows,
                scaling,
                softcap,
                buffer,
            )
        )
    return pieces[0] if len(pieces) == 1 else torch.cat(pieces, dim=1)


def _pieces(length: int, window: int, block_size: int, queries_in_budget: int):
    """(query rows, local key rows, windows) of each piece: whole windows while one fits the budget, else
    runs of whole blocks of one window's queries, each with the window's keys up to its last query
    (later keys are masked anyway), so that its queries are the last of its keys as in a window."""
    windows = length // window
    if queries_in_budget >= window:
        step = max(1, min(windows, queries_in_budget // window))
        for first in range(0, windows, step):
            last = min(windows, first + step)
            rows = slice(first * window, last * window)
            yield rows, rows, last - first
        return
    step = max(block_size, queries_in_budget // block_size * block_size)
    for start in range(0, length, window):
        for first in range(0, window, step):
            stop = min(first + step, window)
            yield slice(start + first, start + stop), slice(start, start + stop), 1


BACKENDS = ("auto", "triton", "c", "torch")


def _path(backend: str, tensors) -> str:
    """ "triton", "c" or "torch" for these tensors (see `retrieval_attention`)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    interpreted = os.environ.get("TRITON_INTERPRET", "").lower() in ("1", "true", "on", "yes")
    if backend == "triton" and not (tensors[0].is_cuda or interpreted):
        raise RuntimeError("backend='triton' needs CUDA tensors (or TRITON_INTERPRET=1 to run the kernel on CPU)")
    grad = torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
    if backend == "c":
        reason = cpu_unavailable_reason(tensors, grad)
        if reason:
            raise RuntimeError(f"backend='c' cannot run this call: {reason}")
    if backend != "auto":
        return backend
    if tensors[0].is_cuda:
        return "triton" if not grad and importlib.util.find_spec("triton") is not None else "torch"
    return "c" if cpu_unavailable_reason(tensors, grad) is None else "torch"


def _windows(
    slot_q, window_q, window_k, window_v, store, num_blocks, chosen, slot_valid, windows, scaling, softcap, buffer
):
    """`windows` windows' queries (the last `queries` of each window's `keys` local keys: a whole
    window, or a run of its blocks with the keys up to it) against their own keys and chosen blocks."""
    heads, length, k, dim = slot_q.shape
    kv_heads, block_size = window_k.shape[0], store.shape[2]
    group, queries, keys = heads // kv_heads, length // windows, window_k.shape[1] // windows
    # window part: [Hkv, group, windows, queries, d] against [Hkv, 1, windows, d, keys]
    wq = window_q.reshape(kv_heads, group, windows, queries, dim)
    wk = window_k.reshape(kv_heads, 1, windows, keys, dim)
    local = (wq @ wk.transpose(-1, -2)).reshape(heads, length, keys)
    # retrieved part: one gather of the chosen blocks' keys and values, query head h from KV head h // group
    first_rows = (torch.arange(heads, device=chosen.device) // group * num_blocks)[:, None, None]
    rows = (first_rows + chosen).flatten()
    if buffer is None:
        picked = store.index_select(1, rows)
    else:
        picked = torch.index_select(
            store, 1, rows, out=buffer[: rows.numel() * store[0, 0].numel() * 2].view(2, -1, *store.shape[2:])
        )
    block_k, block_v = picked.unflatten(1, chosen.shape)  # [H, N, k, B, d] each
    retrieved = (slot_q[:, :, :, None, :] @ block_k.transpose(-1, -2)).squeeze(-2)  # [H, N, k, B]
    scores = soft_cap(torch.cat([retrieved.flatten(2), local], dim=-1).float() * scaling, softcap)
    # an invalid slot's landmark gates its block shut: e^-inf = 0 of the block's weight
    if k:  # in place: `scores` is this function's own tensor (the cat above made it)
        closed = F.pad((~slot_valid)[..., None], (block_size - 1, 0)).flatten(2)  # [H, N, kB]: landmarks
        scores[..., : k * block_size].masked_fill_(closed, float("-inf"))
    weights = grouped_softmax(scores.view(heads, windows, queries, -1), block_size).view(heads, length, -1)
    weights = weights.to(slot_q.dtype)
    wv = window_v.reshape(kv_heads, 1, windows, keys, dim)
    local_w = weights[..., k * block_size :].reshape(kv_heads, group, windows, queries, keys)
    out = (local_w @ wv).reshape(heads, length, dim)
    # [H, N, 1, kB] @ [H, N, kB, d]
    return out + (weights[..., None, : k * block_size] @ block_v.flatten(2, 3)).squeeze(-2)

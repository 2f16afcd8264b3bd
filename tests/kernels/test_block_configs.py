"""Autotune candidates per precision and head dim, pruned by the device's shared memory
(kernels/forgetting_attention/block_configs.py), checked without a GPU."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("triton")

from lm_eval_longmem.kernels.forgetting_attention import block_configs  # noqa: E402
from lm_eval_longmem.kernels.forgetting_attention.parallel import (  # noqa: E402
    dkdv_shared_bytes,
    dq_shared_bytes,
    forward_shared_bytes,
)

SM_86_SHARED, A100_SHARED, H100_SHARED = 101_376, 166_912, 232_448
FORWARD_HALF = [(128, 64, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (128, 32, 4, 3)]
FORWARD_FP32 = [(64, 32, 8, 2, 64), (32, 32, 4, 1, 64), (32, 16, 4, 1)]


@pytest.fixture
def forward_configs(monkeypatch):
    """The forward kernel's GPU candidates (the module may be in interpreter mode here)."""
    monkeypatch.setattr(block_configs, "INTERPRETED", False)
    return block_configs.block_configs(FORWARD_HALF, FORWARD_FP32, (32, 16, 4, 1))


def _blocks(configs):
    return [(c.kwargs["BLOCK_M"], c.kwargs["BLOCK_N"], c.num_warps, c.num_stages) for c in configs]


def _prune(configs, dtype, head_dim, limit, monkeypatch):
    monkeypatch.setattr(block_configs, "device_shared_memory", lambda device: limit)
    pruner = block_configs.shared_memory_pruner(forward_shared_bytes)
    q = torch.empty(1, 8, 2, head_dim, dtype=dtype)
    return _blocks(pruner(configs, {"Q": q}, HEAD_DIM=head_dim, HAS_WINDOW=False))


def test_fp32_inputs_get_the_fp32_candidates_for_their_head_dim(forward_configs, monkeypatch):
    fp32_d64 = [(64, 32, 8, 2), (32, 32, 4, 1), (32, 16, 4, 1)]
    assert _prune(forward_configs, torch.float32, 64, H100_SHARED, monkeypatch) == fp32_d64
    assert _prune(forward_configs, torch.float32, 128, H100_SHARED, monkeypatch) == [(32, 16, 4, 1)]
    assert _prune(forward_configs, torch.bfloat16, 64, H100_SHARED, monkeypatch) == [c[:4] for c in FORWARD_HALF]


def test_configs_beyond_the_devices_shared_memory_are_never_tried(forward_configs, monkeypatch):
    # D 128 in bf16: 128x64 with 3 stages needs 2 * 128 * (128 + 3 * 128) B + 1 KB = 129 KB
    assert forward_shared_bytes(128, 64, 128, 3, 2) == 132_096  # the compiled figure on sm_90 (docs/kernels.md)
    on_a100 = _prune(forward_configs, torch.bfloat16, 128, A100_SHARED, monkeypatch)
    assert on_a100 == [(128, 64, 4, 3), (128, 64, 8, 3), (64, 64, 4, 3), (128, 32, 4, 3)]
    assert _prune(forward_configs, torch.bfloat16, 128, SM_86_SHARED, monkeypatch) == [(128, 32, 4, 3)]
    # nothing fits: the smallest estimate still runs (Triton then reports the real shortage)
    assert _prune(forward_configs, torch.bfloat16, 128, 1024, monkeypatch) == [(128, 32, 4, 3)]


def test_the_estimates_follow_the_tiles_each_kernel_pipelines():
    """Against compiled sm_90 figures from docs/kernels.md (bf16, D 64 and 128)."""
    compiled = [
        (forward_shared_bytes(64, 64, 64, 3, 2), 58_368),
        (dq_shared_bytes(128, 64, 128, 2, 2), 131_328),
        (dkdv_shared_bytes(64, 128, 64, 2, 2), 82_688),
        (dkdv_shared_bytes(64, 64, 128, 2, 2), 107_520),
    ]
    for estimate, actual in compiled:
        assert 0.95 <= estimate / actual <= 1.05, (estimate, actual)

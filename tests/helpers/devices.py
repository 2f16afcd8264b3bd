"""The devices a device-parametrized test runs on."""

from __future__ import annotations

import pytest


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


# Device-parametrized tests run on the CPU everywhere and also on CUDA where a GPU is present
# (CI has none: those cases are skipped there, never required).
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("cuda", id="cuda", marks=pytest.mark.skipif(not _cuda_available(), reason="needs a CUDA GPU")),
]

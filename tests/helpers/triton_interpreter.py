"""Whether this process runs Triton kernels in Triton's interpreter (on CPU tensors).

tests/conftest.py sets TRITON_INTERPRET=1 before collection when there is no GPU; triton fixes its
mode when it is first imported, so a process that imported it earlier cannot interpret, and the
kernel test files then rerun themselves in a fresh process."""

from __future__ import annotations

import os
import sys

import pytest
import torch


def interpreted() -> bool:
    if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1":
        return False
    if "triton" not in sys.modules:
        os.environ["TRITON_INTERPRET"] = "1"
    pytest.importorskip("triton")
    import triton.language as tl
    from triton.runtime.interpreter import InterpretedFunction

    return isinstance(tl.zeros, InterpretedFunction)

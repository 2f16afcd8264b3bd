"""Whether this process runs Triton kernels in Triton's interpreter (on CPU tensors).

tests/conftest.py sets TRITON_INTERPRET=1 before collection when there is no GPU; triton fixes its
mode when it is first imported, so a process that imported it earlier cannot interpret, and the
kernel test files then rerun themselves in a fresh process."""

from __future__ import annotations

import os
import subprocess
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


def run_interpreted_in_a_fresh_process(test_file: str) -> None:
    """Run `test_file`'s tests in a fresh pytest process with TRITON_INTERPRET=1 (for a process that
    imported triton before it could be set); fails with that run's output."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", test_file],
        env={**os.environ, "TRITON_INTERPRET": "1"},
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

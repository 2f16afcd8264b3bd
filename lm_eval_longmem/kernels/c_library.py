"""Build and load the project's small C kernels (the CPU paths of `top_keys/` and
`grouped_softmax/`): compiled once per machine with the system's C compiler, loaded with ctypes.

Why C beside ATen on the CPU: some steps of the memory methods are many tiny, data-dependent
pieces of work (rank a row of scores, attend to a query's own chosen blocks) that ATen can only
express as gathers and batched small products, which cost far more than the arithmetic.

A source file is compiled with `$CC`, else `cc` or `gcc`, into the cache directory
(`common/paths.cache_dir("kernels")`) under a name that hashes the source, the compiler and the
flags, so a changed source is rebuilt and a cache shared by a cluster's nodes is reused. x86
sources mark their hot functions with `VECTOR_CLONES` (AVX-512, AVX2 and plain versions, picked at
load time). Where nothing compiles (no compiler, a failed build) the library reports why and its
callers keep their PyTorch path; `LM_EVAL_LONGMEM_C_KERNELS=0` asks for those paths on purpose.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shutil
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path

SWITCH_ENV = "LM_EVAL_LONGMEM_C_KERNELS"  # "0": never use the C kernels
FLAGS = ("-O3", "-std=gnu11", "-shared", "-fPIC", "-pthread")


class CLibrary:
    """One C source, built and loaded on first use (once per process); `declare` sets the ctypes
    signatures of its functions."""

    def __init__(self, source: Path, declare: Callable[[ctypes.CDLL], None]):
        self.source = source
        self._declare = declare
        self._loaded: ctypes.CDLL | str | None = None
        self._lock = threading.Lock()

    def available(self) -> bool:
        """Built (or already in the cache) and not switched off."""
        return self.unavailable_reason() is None

    def unavailable_reason(self) -> str | None:
        """Why `available()` is False, or None."""
        if os.environ.get(SWITCH_ENV, "1") == "0":
            return f"{SWITCH_ENV}=0"
        loaded = self._load()
        return loaded if isinstance(loaded, str) else None

    def library(self, what: str) -> ctypes.CDLL:
        """The loaded library, or a RuntimeError that says why `what` cannot run."""
        loaded = self._load()
        if isinstance(loaded, str):
            raise RuntimeError(f"{what} is not available: {loaded}")
        return loaded

    def forget(self) -> None:
        """Build or load again on the next use (tests change the compiler)."""
        with self._lock:
            self._loaded = None

    def _load(self) -> ctypes.CDLL | str:
        with self._lock:
            if self._loaded is None:
                self._loaded = self._build_and_load()
            return self._loaded

    def _build_and_load(self) -> ctypes.CDLL | str:
        compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if not compiler:
            return "no C compiler found (set CC, or install cc/gcc)"
        from lm_eval_longmem.common.paths import cache_dir

        name = self.source.name
        identity = hashlib.sha256(
            self.source.read_bytes() + repr((compiler, FLAGS, platform.machine(), platform.system())).encode()
        ).hexdigest()[:16]
        built = cache_dir("kernels") / f"{self.source.stem}-{identity}.so"
        if not built.exists():
            partial = built.with_name(f"{built.name}.{os.getpid()}.partial")
            command = [compiler, *FLAGS, str(self.source), "-o", str(partial), "-lm"]
            try:
                finished = subprocess.run(command, capture_output=True, text=True, timeout=120)
            except (OSError, subprocess.TimeoutExpired) as error:
                return f"{compiler} could not build {name}: {error}"
            if finished.returncode != 0:
                partial.unlink(missing_ok=True)
                return f"{compiler} could not build {name}: {finished.stderr.strip()[-500:]}"
            os.replace(partial, built)  # atomic: another process building the same file meanwhile is harmless
        try:
            library = ctypes.CDLL(str(built))
        except OSError as error:
            return f"could not load {built}: {error}"
        self._declare(library)
        return library

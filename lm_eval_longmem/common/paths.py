"""Where lm-eval-longmem keeps what it builds once and reuses (converted models, token streams)."""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "LM_EVAL_LONGMEM_CACHE"


def cache_dir(*parts: str) -> Path:
    """`$LM_EVAL_LONGMEM_CACHE`, else `$XDG_CACHE_HOME/lm-eval-longmem`, else `~/.cache/...`."""
    root = os.environ.get(CACHE_ENV)
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "lm-eval-longmem")
    path = Path(root, *parts)
    path.mkdir(parents=True, exist_ok=True)
    return path

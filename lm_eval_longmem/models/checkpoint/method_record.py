"""The config keys in which a checkpoint records the method it was extended or trained with.

    "longmem_method": "yarn",
    "longmem_method_args": {"factor": 4.0},

Written here, below the methods, because the machinery that saves checkpoints (e.g.
`compressive_memory/checkpoint.py`) writes them too; `method_framework/recorded.py` reads them back.
"""

from __future__ import annotations

from typing import Any

METHOD_KEY = "longmem_method"
ARGS_KEY = "longmem_method_args"


def record_method(config, name: str, args: dict[str, Any]) -> None:
    """Write the method into a config (for the training module, before `save_pretrained`)."""
    setattr(config, METHOD_KEY, name)
    setattr(config, ARGS_KEY, {k: v for k, v in args.items() if v is not None})

"""Every method by name, found without importing it: a method is the file of `models/methods/`
named after it (`yarn.py` defines `method=yarn`), as a task is its folder's declaration.

Most method files import torch and transformers (through the RoPE, attention and cache
machinery), so the registry lists the folder and imports a method only when it is asked for by
name: an unknown `method=` is refused, the valid names listed and run folders named without
loading any of them, and reports label results files without torch. A new method needs no line
anywhere else; tests/methods/test_method_table.py fails, naming it, for a file that does not
define the method it is named after, or a stale `NAMES_ITS_CHECKPOINT`.
"""

from __future__ import annotations

import pkgutil

from lm_eval_longmem.models import methods as _methods_package


def _method_modules() -> dict[str, str]:
    """name -> the module that defines it, for each file of models/methods/ (listed, not imported)."""
    return {
        info.name: f"{_methods_package.__name__}.{info.name}"
        for info in pkgutil.iter_modules(_methods_package.__path__)
        if not info.name.startswith("_")
    }


METHODS: dict[str, str] = _method_modules()

# The methods whose class overrides `LongMemMethod.checkpoint_identity` (they name the checkpoint
# they run, beside their arguments: `fox` its architecture). Reports import only these, so their
# modules import nothing heavy; every other method names no checkpoint without being imported.
NAMES_ITS_CHECKPOINT: frozenset[str] = frozenset({"fox"})

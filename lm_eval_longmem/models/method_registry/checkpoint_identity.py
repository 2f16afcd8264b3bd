"""A run's method asked how it names its checkpoint (`LongMemMethod.checkpoint_identity`), for the
run-folder name and for reports, which read results files and must not import torch.

Importing every method (`available_methods`) loads torch and transformers with the machinery of
the bounded caches, the attention rules and the RoPE types. Few methods define the hook (`fox`
names the FoX architecture a checkpoint has), so only the method files whose classes define it
are imported, found by reading the files' source (`ast`), never by listing method names; such a
file imports nothing heavy (tests/methods/test_checkpoint_identity.py checks both).
"""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lm_eval_longmem.models import methods
from lm_eval_longmem.models.method_framework.base import LongMemMethod, registered_methods

HOOK = LongMemMethod.checkpoint_identity.__name__


def checkpoint_identity_of(method: str, read_config: Callable[[], Any]) -> dict[str, Any]:
    """What method `method` adds to its arguments to name the checkpoint of `read_config()` (a
    config, or the method arguments a results file records); {} without reading the config when
    the method defines no such name, or is not ours (`--model hf` results record `hf`)."""
    for module in _modules_defining_the_hook():
        importlib.import_module(module)
    cls = registered_methods().get(method)
    if cls is None or cls.checkpoint_identity.__func__ is LongMemMethod.checkpoint_identity.__func__:
        return {}
    return cls.checkpoint_identity(read_config())


@functools.cache
def _modules_defining_the_hook() -> tuple[str, ...]:
    """The modules of `models/methods/` with a class whose body defines the hook, read without
    running them."""
    found = []
    for info in pkgutil.iter_modules(methods.__path__):
        if info.name.startswith("_"):  # as `import_every_module`: not a method file
            continue
        name = f"{methods.__name__}.{info.name}"
        tree = ast.parse(Path(importlib.util.find_spec(name).origin).read_text("utf-8"))
        classes = (node for node in tree.body if isinstance(node, ast.ClassDef))
        if any(isinstance(item, ast.FunctionDef) and item.name == HOOK for cls in classes for item in cls.body):
            found.append(name)
    return tuple(found)

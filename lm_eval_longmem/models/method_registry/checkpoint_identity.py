"""A run's method asked how it names its checkpoint (`LongMemMethod.checkpoint_identity`), for the
run-folder name and for reports, which read results files and must not import torch.

Importing a method file mostly loads torch and transformers with the method's machinery, so only
the methods that define the hook (`table.NAMES_ITS_CHECKPOINT`: `fox` names the FoX architecture
a checkpoint has) are imported, and such a file imports nothing heavy
(tests/methods/test_checkpoint_identity.py checks both).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lm_eval_longmem.models.method_registry.table import NAMES_ITS_CHECKPOINT


def checkpoint_identity_of(method: str, read_config: Callable[[], Any]) -> dict[str, Any]:
    """What method `method` adds to its arguments to name the checkpoint of `read_config()` (a
    config, or the method arguments a results file records); {} without reading the config when
    the method defines no such name, or is not ours (`--model hf` results record `hf`)."""
    if method not in NAMES_ITS_CHECKPOINT:
        return {}
    from lm_eval_longmem.models.method_registry import get_method

    return get_method(method).checkpoint_identity(read_config())

"""How a model is trained, one file per approach; `get_approach` finds one by the recipe's name."""

from __future__ import annotations

import importlib

from .base import Approach
from ..errors import TrainingError

MODULES = {
    "rope_extension": "rope_extension",
    "longlora": "longlora",
    "from_scratch": "from_scratch",
    "infini": "infini",
}


def get_approach(name: str) -> Approach:
    try:
        module = importlib.import_module(f"{__name__}.{MODULES[name]}")
    except (KeyError, ModuleNotFoundError) as err:
        if isinstance(err, ModuleNotFoundError) and err.name != f"{__name__}.{MODULES.get(name)}":
            raise
        raise TrainingError(f"approach={name} is not available in this version.") from None
    return module.APPROACH

"""How results, folder names and messages name the weights `pretrained=` gives.

A path or Hub id is named as given. A model object passed to the Python API
(`model_args={"pretrained": model}`) is named by where it was loaded from (`name_or_path`), or
by its class when it has none (built in memory): never by `str(model)`, which is its whole
module printout."""

from __future__ import annotations

import os


def source_name(pretrained) -> str:
    if isinstance(pretrained, (str, os.PathLike)):
        return str(pretrained)
    config = getattr(pretrained, "config", None)
    name = getattr(pretrained, "name_or_path", None) or getattr(config, "_name_or_path", None)
    return str(name) if name else type(pretrained).__name__

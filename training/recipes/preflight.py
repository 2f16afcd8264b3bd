"""The folders a run reads and writes, checked before anything loads: a model, tokenizer or data
named by a local path must exist (a Hub id is left to the loaders, which fail fast offline), and
output_dir must be a folder this process can write (created if missing), and model_config's
entries must fit the base model's config (for an approach that starts from one). Each failure is
one TrainingError naming the key, the value and what would work."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..approaches import get_approach
from ..errors import TrainingError
from .recipe import Recipe


def check_files(recipe: Recipe) -> None:
    """Every check here; the loop runs it (the command line has run `check_paths` already)."""
    check_paths(recipe)
    if recipe.model_config and get_approach(recipe.approach).starts_from_base_model:  # else checked with the recipe
        from ..approaches.base import check_base_config

        check_base_config(recipe)


def check_paths(recipe: Recipe) -> None:
    """The local paths and output_dir, in well under a second and before torch or transformers is
    imported: a run refused for its paths should not first spend seconds building a model config."""
    from lm_eval_longmem.common.hub import looks_like_hub_id
    from lm_eval_longmem.data.corpora import CORPUS_NAMES

    from ..data.text_sources import PASSKEY

    named = {
        "model": recipe.model if recipe.model != "default" else "",
        "tokenizer": recipe.tokenizer,
        "data": recipe.data if recipe.data not in (*CORPUS_NAMES, PASSKEY) else "",
    }
    for key, value in named.items():
        path = Path(value).expanduser()
        if not value or (not path.exists() and looks_like_hub_id(value)):
            continue
        if not path.exists():
            what = "a text file or folder" if key == "data" else "a folder with its config and tokenizer files"
            raise TrainingError(
                f"{key}={value}: no such file or folder (a local {key} is {what}; a Hub id has "
                "the form namespace/name)."
            )
        if key != "data" and not path.is_dir():
            raise TrainingError(
                f"{key}={value} is a file: a local {key} is a folder (a training run's is <output_dir>/export)."
            )
    check_output_dir(recipe.output_dir)


def check_output_dir(output_dir: str) -> None:
    """output_dir is a folder, or can be made one, that this process can write into."""
    path = Path(output_dir).expanduser()
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        where = "is a file" if existing == path else f"cannot be created: {existing} is a file"
        raise TrainingError(f"output_dir={output_dir} {where}; give a folder (it is created if missing).")
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".write-test-", dir=existing))
    except OSError as err:
        raise TrainingError(
            f"output_dir={output_dir} cannot be written: {existing} refuses new files "
            f"({err.strerror or err}). Give a folder you can write to."
        ) from None

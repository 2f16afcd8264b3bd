"""A method on a model that was loaded before the wrapper met it (`pretrained=<model object>`).

Given a path, the wrapper lets the method edit the config (`prepare_config`) and then loads the
weights into a model built from it. An object is built already, so the same edit is made here:

* on a copy of its config first; a method whose edit leaves the config as it was (checks, or
  values it reads, such as Self-Extend's training length) needs nothing more;
* an edit of the RoPE settings only is then written into the model's config, and its rotary
  embeddings are rebuilt from it, which is all loading does with them (rope/rotation.py);
* any other edit is refused in one line, before anything is changed: pass the path instead.

The object is changed in place (its config, rotary embeddings, attention function), as the
method's `prepare_model` changes any model. So that a later run on the same object never records
one method while running another, an object a method changed is marked, and only that method
with the same arguments may run on it again.
"""

from __future__ import annotations

import copy
from typing import Any

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.models.checkpoint.source_name import source_name
from lm_eval_longmem.models.method_framework.base import LongMemMethod
from lm_eval_longmem.models.rope.rotation import rebuild_rotary_embeddings

# What a model reads of these config fields it reads through its rotary embeddings.
ROPE_FIELDS = frozenset({"rope_parameters", "rope_scaling", "rope_theta"})
CHANGED_BY = "_longmem_changed_by"  # the method (as `describe()` says) that changed a model object


class LoadedModelError(UsageError):
    """A method, or a --model_args setting, cannot be applied to an already-loaded model object."""


def pass_the_path(model) -> str:
    where = getattr(model, "name_or_path", None)
    return f"pass its path as pretrained= ({where!r})" if where else "pass a checkpoint path as pretrained="


def prepare_loaded_model(method: LongMemMethod, model, config_overrides: dict[str, Any]):
    """Apply `method` to the loaded `model` as loading it by path would; returns the model."""
    from lm_eval_longmem.models.fox.compatibility import check_method_fits

    name = source_name(model)
    if config_overrides:
        raise LoadedModelError(
            f"--model_args {', '.join(sorted(config_overrides))} set config fields before the weights are loaded, "
            f"but pretrained= is a model object ({name}), built already: {pass_the_path(model)}, or set them on "
            "the model's config before building it."
        )
    config = model.config
    check_method_fits(config, method, source=name)
    attention_before = getattr(config, "_attn_implementation", None)
    edited = copy.deepcopy(config)
    method.prepare_config(edited)
    changed = _changed_fields(config, edited)
    _refuse_if_changed_by_another(method, model, name)  # after prepare_config: describe() is then complete
    if changed - ROPE_FIELDS:
        raise LoadedModelError(
            f"method={method.name} sets config fields ({', '.join(sorted(changed - ROPE_FIELDS))}) that a model is "
            f"built from, but pretrained= is a model object ({name}), built already: {pass_the_path(model)}."
        )
    if changed:
        config.rope_parameters = copy.deepcopy(edited.rope_parameters)
        rebuild_rotary_embeddings(model, config, method.name)
    model = method.prepare_model(model)
    if changed or getattr(model.config, "_attn_implementation", None) != attention_before:
        setattr(model, CHANGED_BY, method.describe())
    return model


def _refuse_if_changed_by_another(method: LongMemMethod, model, name: str) -> None:
    before = getattr(model, CHANGED_BY, None)
    if before is None or before == method.describe():
        return
    raise LoadedModelError(
        f"method={method.name}: the model object ({name}) was already changed in place by method={before['method']} "
        f"{before['args']} in an earlier run, so it would not run as method={method.name}. Load the model again "
        f"(or {pass_the_path(model)})."
    )


def _changed_fields(config, edited) -> set[str]:
    before, after = config.to_dict(), edited.to_dict()
    return {key for key in before.keys() | after.keys() if before.get(key) != after.get(key)}

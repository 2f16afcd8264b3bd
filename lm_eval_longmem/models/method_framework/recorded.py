"""A checkpoint's own method: the config keys our training module writes, read back.

A checkpoint whose architecture is a method of its own (FoX, a CLEX rope type, the Landmark study's
`llama_with_landmark`) selects that method. A checkpoint
extended by `training/` records in its config.json

    "longmem_method": "yarn",
    "longmem_method_args": {"factor": 4.0},

so `--model longmem --model_args pretrained=<dir>` applies the same method without being told
(the keys and their writer are in `models/checkpoint/method_record.py`; `resolution.py` decides when a
record is used: when `method=` is left out, with explicit method arguments overriding it).
"""

from __future__ import annotations

from typing import Any

from lm_eval_longmem.models.checkpoint.method_record import ARGS_KEY, METHOD_KEY

HUB_OPTIONS = ("revision", "trust_remote_code", "token", "cache_dir")


def recorded_method(config_dict: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """(method name, its arguments) recorded in a config dict (or implied by its architecture), or None."""
    name = config_dict.get(METHOD_KEY)
    if not name:
        from lm_eval_longmem.models.clex.config_format import clex_rope_settings
        from lm_eval_longmem.models.fox.compatibility import is_fox_family
        from lm_eval_longmem.models.landmark.checkpoint import is_study_landmark

        if is_fox_family(config_dict):
            return ("fox", {})
        if is_study_landmark(config_dict):  # the Landmark study's own checkpoint type
            return ("landmark", {})
        # the authors' CLEX checkpoints: their rope type, which transformers cannot build without method=clex
        return ("clex", {}) if clex_rope_settings(config_dict) is not None else None
    args = config_dict.get(ARGS_KEY) or {}
    if not isinstance(args, dict):
        raise ValueError(f"config.json: {ARGS_KEY} must be a mapping of argument names to values, got {args!r}")
    return str(name), dict(args)


def read_recorded_method(pretrained, **hub_options) -> tuple[str, dict[str, Any]] | None:
    """The method recorded in `pretrained` (a path, Hub id, or loaded model), if any."""
    return recorded_method(read_config_dict(pretrained, **hub_options))


def read_config_dict(pretrained, **hub_options) -> dict[str, Any]:
    """`pretrained`'s config as config.json holds it (a loaded model's config as a dict)."""
    config = getattr(pretrained, "config", None)
    if config is not None:
        return config.to_dict()
    from transformers import PretrainedConfig

    config_dict, _ = PretrainedConfig.get_config_dict(str(pretrained), **hub_options)
    return config_dict


def checkpoint_config(pretrained, model_args: dict[str, Any]) -> dict[str, Any]:
    """`pretrained`'s config dict, read with the Hub options of `model_args` (failing fast offline)."""
    from lm_eval_longmem.common.hub import loading_from_hub

    hub_options = {k: model_args[k] for k in HUB_OPTIONS if k in model_args}
    with loading_from_hub(pretrained):
        return read_config_dict(pretrained, **hub_options)

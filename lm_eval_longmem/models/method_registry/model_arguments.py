"""Which `--model_args` keys `--model longmem` takes besides the method's: the wrapper's own,
HFLM's, Hugging Face `from_pretrained` options, and, for anything else, an attribute of the
model's config. Shared by the model (which checks against the loaded config) and the start-up
check (which reads a local checkpoint's config before lm-eval indexes its tasks, so `facter=2`
fails in seconds, not after the task index and the model load).
"""

from __future__ import annotations

import inspect
from functools import cache
from typing import Any

from lm_eval_longmem.errors import UsageError

# Keyword arguments HFLM hands to `from_pretrained` that are not config attributes.
FROM_PRETRAINED_OPTIONS = frozenset(
    {
        "attn_implementation",
        "device_map",
        "low_cpu_mem_usage",
        "load_in_8bit",
        "load_in_4bit",
        "bnb_4bit_compute_dtype",
        "bnb_4bit_quant_type",
        "bnb_4bit_use_double_quant",
        "use_safetensors",
        "cache_dir",
        "local_files_only",
        "token",
        "variant",
        "offload_state_dict",
        "key_mapping",
        "use_kernels",
        "experts_implementation",
    }
)
# Arguments of the wrapper itself (besides method=): name -> what it does, for error messages.
WRAPPER_ARGUMENTS = {
    "reuse_prefix": "bool, default True: generation reuses the KV cache of a prompt prefix "
    "shared with the previous request",
    "overlength": "refuse|skip|middle|left, default refuse: what an input longer than the model takes gets "
    "(skip: not scored, counted; middle: LongBench's cut; left: lm-eval hf's cut)",
    "by_length": "auto|on|off, default auto: scores per input-length bin written into the results "
    "(<metric>@len<lo>-<hi>), for our tasks only under auto",
}


# The wrapper's own parameters besides pretrained= and method= (LongMemLM.__init__ takes them).
WRAPPER_PARAMETERS = frozenset({"device", *WRAPPER_ARGUMENTS})


class UnknownModelArgumentError(UsageError):
    """A `--model_args` key is neither ours, HFLM's, a from_pretrained option nor a config field."""


@cache
def hflm_parameters() -> frozenset[str]:
    from lm_eval.models.huggingface import HFLM

    return frozenset(inspect.signature(HFLM.__init__).parameters) - {"self", "kwargs"}


def config_overrides(other_args: dict[str, Any]) -> dict[str, Any]:
    """The keys of `other_args` (the method's own taken out) meant as config attributes."""
    taken = hflm_parameters() | FROM_PRETRAINED_OPTIONS | WRAPPER_PARAMETERS
    return {k: v for k, v in other_args.items() if k not in taken}


def check_config_arguments(model_args: dict[str, Any], config_source: str | None) -> None:
    """For the start-up check: the `--model_args` keys that nobody takes, read against the config
    in the local folder `config_source` (None, or a config that does not load: left to the
    model load, which checks the same against the config it loads)."""
    from .resolution import resolve_method

    resolved = resolve_method(model_args)
    overrides = config_overrides(dict(resolved.other_args))
    if not overrides or config_source is None:
        return
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(config_source)
    except Exception:  # noqa: BLE001 - the model load reports an unloadable config with its own message
        return
    unknown = unknown_arguments(config, overrides)
    if unknown:
        raise UnknownModelArgumentError(unknown_arguments_message(resolved.build(), unknown))


def unknown_arguments(config, overrides: dict[str, Any]) -> list[str]:
    return sorted(k for k in overrides if not hasattr(config, k))


def unknown_arguments_message(method, unknown: list[str]) -> str:
    from lm_eval_longmem.models.method_framework.arguments import describe_fields

    method_fields = describe_fields(type(method.args)) or ["(none)"]
    return (
        f"Unknown --model_args {', '.join(unknown)} for --model longmem (method="
        f"{method.name}).\n  Arguments of method={method.name}:\n    "
        + "\n    ".join(method_fields)
        + "\n  Wrapper arguments: method, "
        + ", ".join(f"{name} ({help})" for name, help in WRAPPER_ARGUMENTS.items())
        + ", "
        + ", ".join(sorted(hflm_parameters()))
        + "\n  Also accepted: Hugging Face from_pretrained options ("
        + ", ".join(sorted(FROM_PRETRAINED_OPTIONS))
        + ") and attributes of the model's config."
    )

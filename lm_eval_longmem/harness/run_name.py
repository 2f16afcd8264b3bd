"""The results-folder name of a `--model longmem` run: model and method, plus non-default arguments.

lm-eval 0.4.13 names the folder under `--output_path` after `pretrained=` (else a random id), so
runs of different methods on one model would share a folder, and runs of the default model land
in folders like `qdpv68r5`. One rule, used by the lm-eval hook (registration.py) and by
`lm-eval-longmem sweep`, names them instead:

    SmolLM2-135M-Instruct__statedclm
    HuggingFaceTB__SmolLM2-135M__yarn__factor-8
    SmolLM2-135M-Instruct__statedclm__chunk_size-64_max_context_length-512

* model: the embedded default's name without `pretrained=`; a Hub id as lm-eval writes it
  (`org__name`); a local directory by its last folder (with its parent when the last is a generic
  checkpoint name such as `export`, `final`, `checkpoint-500`); a `peft=` adapter adds `+adapter`.
* method: the one the wrapper will run (`method=`, else the one the checkpoint records, else
  `vanilla`).
* arguments: only those whose parsed value differs from the method's default, sorted, as
  `key-value` (so `factor=4` and `factor=4.0` name the same folder, and factor 4 vs 8 do not mix).
  A `None` default counts as what it stands for (`LongMemMethod.resolved_defaults`): `yarn` and
  `yarn,factor=4` are one run and name one folder.
  A method that names its checkpoint (`LongMemMethod.checkpoint_identity`) puts that name first:
  a `fox` run is named by its checkpoint's architecture (fox_architecture.py), so a Transformer
  baseline trained in the FoX code is `..__fox__architecture-transformer-pro`, never the same
  name as FoX (`..__fox__architecture-fox-pro`).
  Characters other than letters, digits, `.`, `_`, `+` and `-` become `-`; a part that is too long or
  lost characters that way is cut and gets an 8-digit hash of the exact values, so names stay
  short, filesystem-safe and distinct.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
from typing import Any

SEPARATOR = "__"
MAX_ARGS_PART = 60
MAX_MODEL_PART = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")
GENERIC_LEAF = re.compile(
    r"^(export|final|merged|model|hf|adapter|best|last|latest|(checkpoint|ckpt|step|epoch|global_step)[-_]?\d*|\d+)$",
    re.I,
)


def parse_model_args(model_args: str | dict[str, Any] | None) -> dict[str, Any]:
    """`--model_args` as a dict, parsed the way lm-eval parses it."""
    if not model_args:
        return {}
    if isinstance(model_args, dict):
        return dict(model_args)
    from lm_eval.utils import simple_parse_args_string

    return simple_parse_args_string(model_args)


def run_folder_name(model_args: str | dict[str, Any] | None) -> str:
    """The folder (and lm-eval `model_name`) of a `--model longmem` run with these arguments.

    Raises the wrapper's own errors for an unknown method or a bad method argument, so a sweep
    can check every run before starting the first.
    """
    from lm_eval_longmem.models.method_registry.resolution import resolve_method

    args = parse_model_args(model_args)
    resolved = resolve_method(args)
    pretrained = args.get("pretrained")
    changed = {**checkpoint_identity(resolved.name, pretrained, resolved.other_args), **non_default_args(resolved)}
    name = f"{model_label({**resolved.other_args, 'pretrained': pretrained})}{SEPARATOR}{_safe(resolved.name)}"
    if changed:
        name += SEPARATOR + _args_label(changed)
    return name


def non_default_args(resolved) -> dict[str, Any]:
    """The given method arguments whose parsed value differs from the default, or from what a `None`
    default stands for (parsed, sorted);
    `resolved`: a `models.methods.resolution.ResolvedMethod`."""
    changed = {}
    stands_for = resolved.cls.resolved_defaults(resolved.args)  # e.g. factor None -> 4.0
    for field in dataclasses.fields(type(resolved.args)):
        if field.name not in resolved.raw_args:
            continue
        if field.default is not dataclasses.MISSING:
            default = field.default
        elif field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        else:
            default = dataclasses.MISSING
        value = getattr(resolved.args, field.name)
        if value != default and not (default is None and field.name in stands_for and value == stands_for[field.name]):
            changed[field.name] = value
    return dict(sorted(changed.items()))


def checkpoint_identity(method: str, pretrained, args: dict[str, Any]) -> dict[str, Any]:
    """How `method` names the checkpoint it runs (`LongMemMethod.checkpoint_identity`: for `fox`,
    which runs many architectures as trained, `architecture` and any switch that differs from it);
    {} for a method that names none, whose checkpoint config is then never read."""
    if pretrained is None:
        return {}
    from lm_eval_longmem.models.method_framework.recorded import checkpoint_config
    from lm_eval_longmem.models.method_registry.checkpoint_identity import checkpoint_identity_of

    return checkpoint_identity_of(method, lambda: checkpoint_config(pretrained, args))


def model_label(args: dict[str, Any]) -> str:
    """Short, safe name of the model a run loads (see the module docstring)."""
    from lm_eval_longmem.models.checkpoint.default_model import DEFAULT_MODEL_NAME
    from lm_eval_longmem.models.checkpoint.source_name import source_name

    pretrained = args.get("pretrained")
    pretrained = None if pretrained is None else source_name(pretrained)  # a model object: where it came from
    label = DEFAULT_MODEL_NAME if pretrained is None else _source_label(pretrained)
    sources = [str(pretrained)]
    for extra in ("peft", "delta"):
        if args.get(extra):
            label += "+" + _source_label(str(args[extra]))
            sources.append(str(args[extra]))
    return _bounded(label, MAX_MODEL_PART, exact="|".join(sources))


def _source_label(source: str) -> str:
    if os.path.isdir(source) or source.startswith((".", "/", "~")) or source.count("/") > 1 or "\\" in source:
        parts = [p for p in re.split(r"[/\\]+", os.path.normpath(os.path.expanduser(source))) if p]
        keep = parts[-2:] if len(parts) > 1 and GENERIC_LEAF.match(parts[-1]) else parts[-1:]
        return SEPARATOR.join(_safe(p) for p in keep) or "model"
    return SEPARATOR.join(_safe(p) for p in source.split("/") if p)  # a Hub id: org__name, as lm-eval


def _args_label(changed: dict[str, Any]) -> str:
    text = "_".join(f"{key}-{_value_text(value)}" for key, value in changed.items())
    exact = json.dumps({k: _jsonable(v) for k, v in changed.items()}, sort_keys=True)
    lossy = _safe(text) != text
    return _bounded(_safe(text), MAX_ARGS_PART, exact=exact, force_hash=lossy)


def _value_text(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}" if value == value else "nan"
    if isinstance(value, (tuple, list)):
        return "+".join(_value_text(v) for v in value)
    return str(value)


def _jsonable(value: Any) -> Any:
    return (
        list(value)
        if isinstance(value, tuple)
        else value
        if isinstance(value, (int, float, str, bool, type(None), list))
        else str(value)
    )


def _safe(text: str) -> str:
    return _UNSAFE.sub("-", text).strip("-") or "x"


def _bounded(text: str, limit: int, exact: str, force_hash: bool = False) -> str:
    if len(text) <= limit and not force_hash:
        return text
    digest = hashlib.sha1(exact.encode("utf-8")).hexdigest()[:8]
    return f"{text[: limit - 9].rstrip('-_.')}-{digest}"

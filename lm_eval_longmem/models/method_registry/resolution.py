"""Which method a run's `--model_args` select, with which arguments: read once, here.

The wrapper, the preflight check, the tasks (which size their inputs before meeting the model)
and the results-folder name all read `--model_args` through `resolve_method`, so all four see
the same method:

* the name: `method=`, else the method the checkpoint records (recorded.py), else `vanilla`;
* the method's own arguments: the explicit ones over the recorded ones, parsed into its `Args`;
* the other model arguments (not `pretrained=` or `method=`), for whoever reads them next.

Errors are the method's one-message errors (unknown method, unknown or malformed argument).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from lm_eval_longmem.errors import LongMemError, UsageError
from lm_eval_longmem.models.method_framework.arguments import parse_args
from lm_eval_longmem.models.method_framework.recorded import checkpoint_config, recorded_method
from lm_eval_longmem.models.method_registry import (
    DEFAULT_METHOD,
    LongMemMethod,
    UnknownMethodError,
    get_method,
    method_names,
    split_method_args,
)

logger = logging.getLogger(__name__)


class CheckpointNeedsItsMethodError(UsageError):
    """A checkpoint whose weights only its own method runs (CLEX, Landmark), asked to run otherwise."""


@dataclass(frozen=True)
class ResolvedMethod:
    name: str
    cls: type[LongMemMethod]
    raw_args: dict[str, Any]  # the method's own arguments as given (over the recorded ones), unparsed
    other_args: dict[str, Any]  # every other model argument, `pretrained=` and `method=` taken out
    args: Any  # `raw_args` parsed: an instance of `cls.Args`
    from_checkpoint: bool  # `method=` was left out and the checkpoint named the method

    def build(self) -> LongMemMethod:
        return self.cls(self.args)


def resolve_method(model_args: dict[str, Any]) -> ResolvedMethod:
    """The method `model_args` (a `--model_args` dict, `pretrained=` and `method=` included) select."""
    rest = dict(model_args)
    pretrained, method = rest.pop("pretrained", None), rest.pop("method", None)
    name, merged, from_checkpoint = _method_name(pretrained, method, rest)
    cls = get_method(name)
    own, other = split_method_args(cls, merged)
    return ResolvedMethod(name, cls, own, other, parse_args(name, cls.arguments_class(own), own), from_checkpoint)


def check_method_arguments(model_args: dict[str, Any]) -> None:
    """Raise our own error for an unknown method or a bad method argument, as the model would.

    For the preflight check, before lm-eval indexes its tasks. Anything else (say, a `pretrained`
    path that is not there) is left for the model load to report as it always has.
    """
    try:
        resolve_method(model_args).build()
    except LongMemError:
        raise
    except Exception:  # noqa: BLE001 - reported by the model load, with its own message
        return


def _method_name(pretrained, method, model_args: dict[str, Any]) -> tuple[str, dict[str, Any], bool]:
    """(name, model args with any recorded method arguments under them, whether recorded)."""
    if isinstance(method, str) and not method.strip():  # `method=$METHOD` with nothing in it: not the default
        raise UnknownMethodError(
            f"method= is empty: name a method ({', '.join(method_names())}), or leave method= out for "
            f"{DEFAULT_METHOD} (or the method the checkpoint records)."
        )
    if method is not None and pretrained is not None:
        refuse_dropping_the_checkpoint_s_method(pretrained, f"method={method}", method, model_args)
    if method is not None or pretrained is None:  # not `method or default`: method=0 is no method, not vanilla
        return (DEFAULT_METHOD if method is None else method), model_args, False
    recorded = recorded_method(checkpoint_config(pretrained, model_args))
    if recorded is None:
        return DEFAULT_METHOD, model_args, False
    name, recorded_args = recorded
    if name in method_names():
        recorded_args = get_method(name).recorded_arguments_kept(recorded_args, model_args)
    logger.info("Using method=%s with %s, recorded in %s's config.", name, recorded_args, pretrained)
    return name, {**recorded_args, **model_args}, True


def refuse_dropping_the_checkpoint_s_method(
    pretrained, asked: str, method: str | None = None, hub_options=None
) -> None:
    """When `pretrained` records (or, by its format, is) a method with a mechanism of its own
    (`LongMemMethod.checkpoint_mechanism`) and the run asks for something else (`asked`:
    "method=yarn", "--model hf"): one line refusing it where transformers cannot build the
    checkpoint without that method (clex: `KeyError: 'clex'`), else a warning (once) that the run
    leaves the mechanism out. Unreadable configs pass (the model load reports them)."""
    try:
        recorded = recorded_method(checkpoint_config(pretrained, dict(hub_options or {})))
    except Exception:  # noqa: BLE001 - a Hub id offline, a folder without config.json: the load reports it
        return
    if recorded is None or recorded[0] == method or recorded[0] not in method_names():
        return
    name = recorded[0]
    cls = get_method(name)
    if cls.checkpoint_mechanism is None:
        return
    said = f"{pretrained} is a {name} checkpoint: its weights were trained with {cls.checkpoint_mechanism}"
    fix = f"Run it with --model longmem and method={name}, or leave method= out: the checkpoint selects it."
    if cls.checkpoint_needs_this_method:
        raise CheckpointNeedsItsMethodError(f"{said}, which {asked} cannot run (transformers cannot build it). {fix}")
    if (str(pretrained), asked) not in _warned:
        _warned.add((str(pretrained), asked))
        logger.warning("%s; %s runs the weights without them. %s", said, asked, fix)


_warned: set[tuple[str, str]] = set()

"""`model_config` entries checked against the config they change, before any weights load: an
entry must have the kind of value the config holds there (a number for hidden_size, a
boolean for use_cache, ...), or `hidden_size: "64"` would fail deep inside the model code, or
worse, be used as text. Entries the config lacks, or holds as None, are taken as given."""

from __future__ import annotations

from typing import Any

from lm_eval_longmem.common.typed_values import show_value

from ..errors import TrainingError

KINDS = (
    (bool, "true or false"),
    ((int, float), "a number"),
    (str, "a text"),
    ((list, tuple), "a list"),
    (dict, "a mapping"),
)  # integers and floats are one kind: hidden_ratio defaults to 4, recipes give 3.5


def kind_of(value: Any) -> tuple[Any, str] | None:
    return next(((types, name) for types, name in KINDS if isinstance(value, types)), None)


def fits(old: Any, new: Any) -> bool:
    """`new` may replace `old`: the same kind of value (or the config has none there)."""
    return old is None or kind_of(old) is None or kind_of(new) == kind_of(old)


def check_config_fields(config, fields: dict[str, Any], whose: str) -> None:
    """TrainingError for the first entry of `fields` that does not fit `config` (`whose`: the
    config's name in the message, e.g. "the base model's")."""
    for name, value in fields.items():
        old = getattr(config, name, None)
        if not fits(old, value):
            raise TrainingError(
                f"model_config.{name}={show_value(value)} is not valid: {whose} config holds "
                f"{kind_of(old)[1]} there ({show_value(old)})."
            )

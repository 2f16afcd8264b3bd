"""Recipes from YAML plus `key=value` overrides, type- and range-checked before anything loads,
with messages that name the key, the value as typed, where it came from and what is valid.

A recipe is named by its path or by its name among the recipes shipped beside this module. An
override's value is read as its key's declared type, never guessed: a text key takes the text
as typed, a number must read as one in full (`lr=1e-3x` is refused, not taken for 0.001), a
list is `[a,b]` or `a,b`, and a mapping key takes YAML (`model_config={hidden_size: 64}`) or one
entry at a time (`method_args.factor=8`). The ranges are the ones declared beside each key (in
recipe.py, or in the approach that reads it), checked here for every key alike; a key that only
another approach reads is refused, as it would do nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import typing
from pathlib import Path
from typing import Any

from lm_eval_longmem.common.suggestions import did_you_mean, either
from lm_eval_longmem.common.typed_values import coerce, show_value
from lm_eval_longmem.models.method_framework.arguments import _type_name

from ..approaches import approaches_reading, get_approach
from ..errors import TrainingError
from .key_checks import NotEmpty, OneOf
from .recipe import Recipe, recipe_class, recipe_fields
from .yaml_reader import RecipeYamlError, read_recipe_mapping, read_yaml_value

# The shipped recipes are the YAML files beside this package's modules.
RECIPES_DIR = Path(__file__).parent
COMMAND_LINE = "on the command line"


def key_types() -> dict[str, Any]:
    return type_hints(recipe_class())


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def text_keys() -> frozenset[str]:
    """Keys whose values are texts or lists of texts (read from YAML as typed)."""
    return frozenset(
        name for name, annotation in key_types().items() if annotation is str or typing.get_origin(annotation) is tuple
    )


def shipped_recipes() -> dict[str, Path]:
    return {p.stem: p for p in sorted(RECIPES_DIR.glob("*.yaml"))}


def find_recipe(name_or_path: str) -> Path:
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    shipped = shipped_recipes()
    stem = path.name.removesuffix(".yaml")
    if stem in shipped and (path.suffix == "" or not path.parent.exists() or path.parent.name == "recipes"):
        return shipped[stem]
    raise TrainingError(f"No recipe {name_or_path!r}. Shipped recipes: {', '.join(shipped)} (or give a YAML path).")


def load_recipe(name_or_path: str, overrides: list[str] = (), check_paths: bool = False) -> Recipe:
    """The recipe with its overrides applied, every key checked (TrainingError otherwise);
    `check_paths`: also its local paths and output_dir (preflight.check_paths), before the
    approach's own check, which may import torch and build a model config."""
    path = find_recipe(name_or_path)
    where = f"in recipe {path.stem if path.parent == RECIPES_DIR else path}"
    values = read_recipe_file(path, where)
    shown = {name: (in_one_line(value), where) for name, value in values.items()}
    values.setdefault("name", path.stem)
    refuse_repeated_overrides(overrides)
    for item in overrides:
        name, text = apply_override(values, item)
        shown[name] = (in_one_line(text), COMMAND_LINE)
    return build_recipe(values, shown, check_paths)


def read_recipe_file(path: Path, where: str) -> dict[str, Any]:
    try:
        values = read_recipe_mapping(path.read_text("utf-8"), text_keys())
    except (RecipeYamlError, UnicodeDecodeError) as err:
        raise TrainingError(f"{path}: not valid YAML ({err}).") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise TrainingError(f"{path}: a recipe is a mapping of keys to values, not {in_one_line(values)}.")
    refuse_unknown_keys(values, where)
    return values


def refuse_repeated_overrides(overrides) -> None:
    """`max_steps=2 max_steps=3` would silently run the last; a key given twice in one YAML value
    is refused the same way."""
    typed: dict[str, str] = {}
    for item in overrides:
        name, sep, text = item.partition("=")
        if sep and typed.setdefault(name, text) != text:
            raise TrainingError(
                f"{name} is given twice on the command line ({name}={typed[name]} and {name}={text}): give it once."
            )


def apply_override(values: dict[str, Any], item: str) -> tuple[str, str]:
    """Set one `key=value` (or `mapping.entry=value`) in `values`; returns the key (the mapping's,
    for an entry) and the value as typed."""
    name, sep, text = item.partition("=")
    head, dot, entry = name.partition(".")
    if not sep or not head:
        raise TrainingError(f"Override {item!r} is not key=value.")
    refuse_unknown_keys({head: None}, COMMAND_LINE)
    annotation = key_types()[head]
    if dot:
        if annotation is not dict or not entry:
            raise TrainingError(
                f"Override {item!r}: only mapping keys (model_config, method_args) take an entry "
                f"name after a dot (model_config.hidden_size=64); {head} is {_type_name(annotation)}."
            )
        mapping = {} if values.get(head) is None else values[head]
        if not isinstance(mapping, dict):
            raise TrainingError(f"Override {item!r}: {head} is not a mapping.")
        values[head] = {**mapping, entry: read_override_yaml(item, text)}
    elif annotation is dict:
        values[head] = read_override_yaml(item, text)
    else:  # text as typed; numbers, booleans, choices and lists are read from it by `coerce`, strictly
        values[head] = text
    return head, text


def in_one_line(value: Any) -> str:
    """A value as typed, for a one-line message: repr() where it holds a line break or another
    control character, or only blanks (`output_dir=' '`, which would read as nothing)."""
    text = show_value(value)
    return text if text.isprintable() and (text.strip() or not text) else repr(text)


def read_override_yaml(item: str, text: str) -> Any:
    try:
        return read_yaml_value(text)
    except RecipeYamlError as err:
        raise TrainingError(f"Override {item!r}: not valid YAML ({err}).") from None


def refuse_unknown_keys(values: dict, where: str) -> None:
    known = recipe_fields()
    unknown = [in_one_line(str(name)) for name in values if name not in known]
    if unknown:
        suggestion = did_you_mean(unknown[0], known) if len(unknown) == 1 else ""
        raise TrainingError(
            f"unknown recipe key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} {where}.{suggestion} "
            f"Valid keys: {', '.join(known)} (`lm-eval-longmem train --help` says what each does)."
        )


def build_recipe(values: dict[str, Any], shown: dict[str, tuple[str, str]], check_paths: bool = False) -> Recipe:
    """`shown`: each key's value as typed and where it came from, for messages."""
    typed = {
        name: coerce_key(name, value, *shown.get(name, (in_one_line(value), ""))) for name, value in values.items()
    }
    recipe = recipe_class()(**typed)
    if "output_dir" not in values:  # given empty (`output_dir=$UNSET`) is refused, not sent to the default
        recipe.output_dir = str(Path("runs") / recipe.name)
    check_recipe(recipe, shown, check_paths)
    return recipe


def coerce_key(name: str, value: Any, text: str, where: str) -> Any:
    annotation = key_types()[name]
    if annotation is dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise TrainingError(f"{name}={text} {where} is not valid: expected a mapping such as {{factor: 8}}.")
        for entry, item in value.items():
            if not all_finite(item):
                raise TrainingError(
                    f"{name}.{in_one_line(entry)}={in_one_line(item)} {where} is not valid: expected finite numbers."
                )
        return dict(value)
    if annotation is str and value is None:
        return ""
    if not plain_enough(value, annotation):
        raise TrainingError(f"{name}={text} {where} is not valid: expected {expected_kind(annotation)}.")
    check = recipe_fields()[name].metadata["check"]
    try:
        typed = coerce(value, annotation)
        if isinstance(check, OneOf) and not check.allows(typed):
            raise ValueError(f"expected {check}")
        return typed
    except (TypeError, ValueError) as err:
        choices = (
            typing.get_args(annotation)
            if typing.get_origin(annotation) is typing.Literal
            else check.choices()
            if isinstance(check, OneOf)
            else ()
        )
        hint = did_you_mean(str(value), choices) if choices else ""
        raise TrainingError(f"{name}={text} {where} is not valid: {err}.{hint}") from None


def all_finite(value: Any) -> bool:
    """No infinity or NaN anywhere in a mapping entry (YAML's .inf and .nan): no config or method
    argument means them, and a NaN rope_theta would train on NaNs without a word."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(all_finite(v) for v in value)
    return True


def plain_enough(value: Any, annotation: Any) -> bool:
    """No value that `coerce` would turn into text by spelling it out: a null or a boolean for
    a text (or list item), a mapping anywhere (None would become "None", true "True")."""
    if typing.get_origin(annotation) is tuple:
        return (
            value is not None
            and not isinstance(value, dict)
            and all(
                isinstance(item, (str, int, float)) and not isinstance(item, bool)
                for item in (value if isinstance(value, list) else [value])
            )
        )
    if annotation is str:
        return isinstance(value, (str, int, float)) and not isinstance(value, bool)
    return not isinstance(value, (dict, list))


def expected_kind(annotation: Any) -> str:
    """ "a number", "an integer", "a list", ... as range messages begin."""
    if typing.get_origin(annotation) is tuple:
        return "a list of texts"
    return {int: "an integer", float: "a number", str: "a text", bool: "true or false"}.get(annotation, "a value")


def check_recipe(recipe: Recipe, shown: dict[str, tuple[str, str]] | None = None, check_paths: bool = False) -> None:
    """Every key's declared range, no key that only another approach reads among those set
    (`shown`), the local paths and output_dir when asked (`check_paths`), and the approach's own
    demands (its keys that must agree, the method and its arguments), all before anything loads;
    TrainingError names what is wrong."""
    problems = []
    for field in dataclasses.fields(recipe):
        check = field.metadata.get("check")
        value = getattr(recipe, field.name)
        if check is not None and not check.allows(value):
            text, where = (shown or {}).get(field.name, (in_one_line(value), ""))
            kind = expected_kind(type_hints(type(recipe))[field.name])
            problems.append(f"{field.name}={text}{' ' + where if where else ''} {what_is_wrong(check, kind)}")
    if problems:
        raise TrainingError("; ".join(problems) + ".")
    refuse_keys_of_other_approaches(recipe, shown or {})
    if check_paths:  # well under a second, no torch: before a check that may build a model config
        from .preflight import check_paths as check_local_paths

        check_local_paths(recipe)
    get_approach(recipe.approach).check(recipe)


def what_is_wrong(check, kind: str) -> str:
    """How a value fails its key's check, for the message (`kind`: "an integer", "a text", ...)."""
    if isinstance(check, NotEmpty):
        return f"is empty: expected {kind} that is not empty{' or blank' if kind == 'a text' else ''}"
    if isinstance(check, OneOf):
        return f"is not valid: expected {check}"
    return f"is out of range: expected {kind} {check}"


def refuse_keys_of_other_approaches(recipe: Recipe, given) -> None:
    """A key set in the recipe or on the command line that only other approaches read would do
    nothing: refused, naming the approaches that read it."""
    own = get_approach(recipe.approach).key_names()
    by_readers: dict[tuple[str, ...], list[str]] = {}
    for name in given:
        readers = approaches_reading(name)
        if readers and name not in own:
            by_readers.setdefault(tuple(readers), []).append(name)
    if not by_readers:
        return
    keys = [
        f"{', '.join(names)} ({'a key' if len(names) == 1 else 'keys'} of approach={either(readers)})"
        for readers, names in by_readers.items()
    ]
    them = "it" if sum(len(names) for names in by_readers.values()) == 1 else "them"
    (first, *more) = by_readers
    remedy = f"approach={first[0]}" if not more and len(first) == 1 else f"the approach that reads {them}"
    raise TrainingError(
        f"approach={recipe.approach} does not read {either(keys, 'and')}: remove {them} or set {remedy}."
    )


def describe_keys() -> str:
    """Every key with type, range, default and help, grouped by section (for --help)."""
    sections: dict[str, list[str]] = {}
    for f in dataclasses.fields(recipe_class()):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        check = f.metadata.get("check")
        listed = isinstance(check, (NotEmpty, OneOf))  # "str, not empty" but "int >= 1"
        kind = _type_name(key_types()[f.name]) + (f", {check}" if listed else f" {check}" if check else "")
        sections.setdefault(f.metadata["section"], []).append(
            f"  {f.name} ({kind}, default {default!r}): {f.metadata['help']}"
        )
    return "\n".join(f"[{section}]\n" + "\n".join(lines) for section, lines in sections.items())

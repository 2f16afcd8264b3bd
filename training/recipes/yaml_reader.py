"""Recipe YAML read as written, never reinterpreted.

PyYAML follows YAML 1.1, whose implicit types surprise: `010` is 8 (octal), `1:30` is 90
(base 60), `yes`/`on`/`off` are booleans (`name: no` would become the text "False") and `1_000`
is 1000. Recipes (files, `key=value` overrides, the mappings inside `model_config` and
`method_args`) are read with YAML 1.2's core schema instead: only `true`/`false` are booleans,
only decimal digits are integers, `~`/`null`/empty is null, all else is text. A text key (or a
list of texts) takes its value exactly as typed (`name: 1.50` stays "1.50", not "1.5"). A key
given twice, a value containing itself, an explicit tag other than the core ones or any other
malformed YAML is a RecipeYamlError, never another exception.
"""

from __future__ import annotations

import math
import re
from typing import Any

import yaml

CORE_TAGS = {name: f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "str", "seq", "map")}


class RecipeYamlError(ValueError):
    """The text is not YAML a recipe accepts; the message says where and why."""


class CoreSchemaLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core-schema resolvers and strict constructors for them."""


INTEGER = r"[-+]?[0-9]+"
FLOAT = r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
SPECIAL_FLOATS = {".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf, ".nan": math.nan}

CoreSchemaLoader.yaml_implicit_resolvers = {}
for _tag, _pattern, _first in [
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
    ("int", INTEGER, list("-+0123456789")),
    ("float", rf"{FLOAT}|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)", list("-+0123456789.")),
]:
    CoreSchemaLoader.add_implicit_resolver(CORE_TAGS[_tag], re.compile(rf"^(?:{_pattern})$"), _first)


def _refuse(node, why: str):
    raise yaml.constructor.ConstructorError(None, None, f"{node.value!r}: {why}", node.start_mark)


def _construct_bool(loader, node):
    text = loader.construct_scalar(node).lower()
    return text == "true" if text in ("true", "false") else _refuse(node, "a boolean is true or false")


def _construct_int(loader, node):
    text = loader.construct_scalar(node)
    return int(text) if re.fullmatch(INTEGER, text) else _refuse(node, "an integer is written in decimal digits")


def _construct_float(loader, node):
    text = loader.construct_scalar(node)
    if text.lower() in SPECIAL_FLOATS:
        return SPECIAL_FLOATS[text.lower()]
    return float(text) if re.fullmatch(FLOAT, text) else _refuse(node, "not a number")


def _construct_null(loader, node):
    loader.construct_scalar(node)
    return None


CoreSchemaLoader.yaml_constructors = {
    CORE_TAGS["null"]: _construct_null,
    CORE_TAGS["bool"]: _construct_bool,
    CORE_TAGS["int"]: _construct_int,
    CORE_TAGS["float"]: _construct_float,
    CORE_TAGS["str"]: yaml.SafeLoader.construct_yaml_str,
    CORE_TAGS["seq"]: yaml.SafeLoader.construct_yaml_seq,
    CORE_TAGS["map"]: yaml.SafeLoader.construct_yaml_map,
    None: yaml.SafeLoader.construct_undefined,  # any other tag: "could not determine a constructor"
}


def _read(text: str) -> tuple[Any, Any]:
    """The document's root node and its value (None, None for an empty document)."""
    loader = None
    try:
        loader = CoreSchemaLoader(text)  # refuses control characters at once
        node = loader.get_single_node()
        if node is None:
            return None, None
        check_node_tree(node)
        return node, loader.construct_document(node)
    except yaml.YAMLError as err:
        raise RecipeYamlError(describe(err)) from None
    except RecursionError:
        raise RecipeYamlError("nested too deeply") from None
    finally:
        if loader is not None:
            loader.dispose()


def read_yaml_value(text: str) -> Any:
    """One YAML value: a `key=value` override's value, or what a recipe file holds."""
    return _read(text)[1]


def read_recipe_mapping(text: str, text_keys: frozenset[str]) -> Any:
    """A recipe file's values (anything but a mapping is returned as read, for the caller to
    refuse); the values of `text_keys` (texts and lists of texts) as typed."""
    root, values = _read(text)
    if isinstance(values, dict):
        for key_node, value_node in root.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value in text_keys:
                values[key_node.value] = as_typed(value_node, values[key_node.value])
    return values


def as_typed(node, constructed: Any) -> Any:
    """A scalar's text as typed (a plain null is None), a list's items so; else `constructed`."""
    if isinstance(node, yaml.ScalarNode):
        return None if node.style is None and node.tag == CORE_TAGS["null"] else node.value
    if isinstance(node, yaml.SequenceNode):
        return [as_typed(item, value) for item, value in zip(node.value, constructed)]
    return constructed


def check_node_tree(node, path: tuple = (), checked: set[int] | None = None) -> None:
    """Refuse a key given twice in one mapping (YAML would keep the last one silently) and an
    alias inside its own anchor (a value that contains itself). Aliased nodes are checked once."""
    checked = set() if checked is None else checked
    if any(node is outer for outer in path):
        raise yaml.constructor.ConstructorError(
            None, None, "an alias refers to a value that contains it", node.start_mark
        )
    if id(node) in checked:
        return
    path = (*path, node)
    if isinstance(node, yaml.MappingNode):
        keys = set()
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                if (key_node.tag, key_node.value) in keys:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key_node.value!r} is given twice", key_node.start_mark
                    )
                keys.add((key_node.tag, key_node.value))
            check_node_tree(key_node, path, checked)
            check_node_tree(value_node, path, checked)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            check_node_tree(item, path, checked)
    checked.add(id(node))


def describe(err: yaml.YAMLError) -> str:
    """A YAML error in one line: what is wrong and where (line and column)."""
    if not isinstance(err, yaml.MarkedYAMLError):
        return " ".join(str(err).split())
    what = ", ".join(part for part in (err.context, err.problem) if part)
    mark = err.problem_mark or err.context_mark
    return f"{what} (line {mark.line + 1}, column {mark.column + 1})" if mark else what

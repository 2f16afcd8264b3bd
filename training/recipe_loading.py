"""Recipes from YAML plus `key=value` overrides, type-checked, with messages that list what is valid.

A recipe is named by its path or by its name among the recipes shipped in `recipes/`. Overrides
are parsed as YAML scalars (`lr=1e-4`, `lora_targets=[q_proj,v_proj]`); a mapping key takes one
entry at a time (`method_args.factor=8`).
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Any

import yaml

from lm_eval_longmem.models.methods.arguments import _type_name
from lm_eval_longmem.typed_values import coerce
from lm_eval_longmem_training.errors import TrainingError
from lm_eval_longmem_training.recipe import Recipe, recipe_fields

RECIPES_DIR = Path(__file__).parent / "recipes"


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


def load_recipe(name_or_path: str, overrides: list[str] = ()) -> Recipe:
    path = find_recipe(name_or_path)
    try:
        values = yaml.safe_load(path.read_text("utf-8")) or {}
    except yaml.YAMLError as err:
        raise TrainingError(f"{path}: not valid YAML ({err})") from None
    if not isinstance(values, dict):
        raise TrainingError(f"{path}: a recipe is a mapping of keys to values")
    values.setdefault("name", path.stem)
    for item in overrides:
        apply_override(values, item)
    recipe = build_recipe(values, source=str(path))
    if not recipe.output_dir:
        recipe.output_dir = str(Path("runs") / recipe.name)
    return recipe


def apply_override(values: dict[str, Any], item: str) -> None:
    name, sep, raw = item.partition("=")
    if not sep or not name:
        raise TrainingError(f"Override {item!r} is not key=value.")
    value = yaml.safe_load(raw) if raw.strip() else ""
    head, _, sub = name.partition(".")
    if sub:
        mapping = values.setdefault(head, {})
        if not isinstance(mapping, dict):
            raise TrainingError(f"Override {item!r}: {head} is not a mapping.")
        mapping[sub] = value
    else:
        values[name] = value


def build_recipe(values: dict[str, Any], source: str) -> Recipe:
    fields = recipe_fields()
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise TrainingError(f"{source}: unknown recipe key(s) {', '.join(unknown)}. Valid keys:\n{describe_keys()}")
    hints = typing.get_type_hints(Recipe)
    typed = {}
    for name, value in values.items():
        typed[name] = coerce_key(name, value, hints[name], source)
    recipe = Recipe(**typed)
    check_consistent(recipe, source)
    return recipe


def coerce_key(name: str, value: Any, annotation: Any, source: str) -> Any:
    if annotation is dict:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise TrainingError(f"{source}: {name} must be a mapping, got {value!r}")
        return dict(value)
    if annotation is str and value is None:
        return ""
    try:
        return coerce(value, annotation)
    except (TypeError, ValueError) as err:
        raise TrainingError(f"{source}: {name}={value!r} is not valid ({err}).") from None


def check_consistent(recipe: Recipe, source: str) -> None:
    positive = ("seq_len", "micro_batch_size", "grad_accum_steps", "max_steps", "lora_r", "log_every", "keep_checkpoints")
    for name in positive:
        if getattr(recipe, name) < 1:
            raise TrainingError(f"{source}: {name} must be at least 1, got {getattr(recipe, name)}.")
    if recipe.warmup_steps < 0 or recipe.save_every < 0 or recipe.stop_after_steps < 0:
        raise TrainingError(f"{source}: warmup_steps, save_every and stop_after_steps must be >= 0.")
    if recipe.approach == "longlora" and recipe.s2_attention:
        group = s2_group_size(recipe)
        if group < 2 or recipe.seq_len % group:
            raise TrainingError(
                f"{source}: S2-attention needs seq_len ({recipe.seq_len}) to be a multiple of its group size "
                f"({group} = s2_group_fraction {recipe.s2_group_fraction} x seq_len) and the group >= 2."
            )


def s2_group_size(recipe: Recipe) -> int:
    return int(round(recipe.seq_len * recipe.s2_group_fraction))


def describe_keys() -> str:
    """Every key with type, default and help, grouped by section (for --help and errors)."""
    hints = typing.get_type_hints(Recipe)
    sections: dict[str, list[str]] = {}
    for f in dataclasses.fields(Recipe):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        line = f"  {f.name} ({_type_name(hints[f.name])}, default {default!r}): {f.metadata['help']}"
        sections.setdefault(f.metadata["section"], []).append(line)
    return "\n".join(f"[{section}]\n" + "\n".join(lines) for section, lines in sections.items())

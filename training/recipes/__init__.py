"""What a recipe is, and the recipes shipped.

The modules here declare the keys (`key.py`, `key_checks.py`), compose them with each approach's
own into one `Recipe` (`recipe.py`), read YAML as typed (`yaml_reader.py`), load and check a
recipe with its overrides (`loading.py`, `config_fields.py`) and check the folders it names
before anything loads (`preflight.py`). The YAML files beside them are the shipped recipes, one
per method and a `tiny-` variant of each, listed by `lm-eval-longmem train --help`.

Nothing is imported here: the approaches import `key` while `recipe` imports the approaches.
"""

"""What the harness glue reads off an `lm_eval run` command line: our model's name, the
`--model_args` / `--metadata` strings as lm-eval parses them, and the `--tasks` names.

Shared by the start-up checks (preflight.py), the default task metadata and registration, so
each reads the command line the same way and none imports another for it."""

from __future__ import annotations

from typing import Any

MODEL_NAME = "longmem"


def arguments_dict(value: Any) -> dict:
    """`--model_args` / `--metadata` as lm-eval parses them (typed values), from a dict or "k=v,k=v"."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip():
        from lm_eval.utils import simple_parse_args_string

        return simple_parse_args_string(value)
    return {}


def repeated_keys(value: Any) -> dict[str, list[str]]:
    """Keys a "k=v,k=v" string gives more than once with different values, with every value as
    typed (lm-eval's string parser keeps the last one)."""
    if not isinstance(value, str):
        return {}
    given: dict[str, list[str]] = {}
    for item in (part for part in value.strip().split(",") if part):  # lm-eval's own split
        key, _, raw = item.partition("=")
        given.setdefault(key, []).append(raw)
    return {key: values for key, values in given.items() if len(set(values)) > 1}


def task_names(tasks: Any) -> list[str]:
    """`--tasks` as a list of names (comma-separated strings split; anything else dropped)."""
    if isinstance(tasks, str):
        tasks = [tasks]
    names = []
    for item in tasks or []:
        if isinstance(item, str):
            names += [t.strip() for t in item.split(",") if t.strip()]
    return names

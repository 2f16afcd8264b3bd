"""The evaluation settings of a results file that change its scores, beside the model and method.

Two files of one model + method + arguments are the same run only if they were also evaluated
the same way: `--limit`, `--gen_kwargs`, the chat template, the system instruction and the
few-shot setting (for the whole call), and each task's own options (`--metadata`) and number of
shots. The leaderboard and the comparison plots keep runs that differ in any of these apart and
name what differs; the sample counts show beside them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

# Task metadata keys that lm-eval or our tasks write themselves (not options a user chose).
_RECORDED_NOT_CHOSEN = frozenset({"version", "config_source", "protocol", "pretrained", "tokenizer"})
DEFAULT = "default"


def _text(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def call_settings(data: dict) -> dict[str, str]:
    """The settings of the whole lm_eval call: one value each, "none"/"off" when unset."""
    config = data.get("config") or {}
    chat = data.get("chat_template_sha") or (data.get("chat_template") and _text(data.get("chat_template")))
    system = data.get("system_instruction_sha") or data.get("system_instruction")
    return {
        "limit": _text(config.get("limit")),
        "gen_kwargs": _text(config.get("gen_kwargs") or None),
        "chat_template": f"on ({str(chat)[:8]})" if chat else "off",
        "system_instruction": f"on ({str(system)[:8]})" if system else "off",
        "fewshot_as_multiturn": "on" if data.get("fewshot_as_multiturn") else "off",
    }


def task_settings(data: dict, task: str) -> dict[str, str]:
    """`task`'s own options as the file records them (--metadata, less what lm-eval copied from
    --model_args and what the task recorded itself) and its number of shots."""
    config = data.get("config") or {}
    model_args = config.get("model_args")
    copied = set(model_args) if isinstance(model_args, dict) else set()
    if isinstance(model_args, str):
        copied = {item.split("=", 1)[0].strip() for item in model_args.split(",") if "=" in item}
    metadata = ((data.get("configs") or {}).get(task) or {}).get("metadata") or {}
    found = {
        key: _text(value)
        for key, value in sorted(metadata.items())
        if key not in _RECORDED_NOT_CHOSEN and key not in copied
    }
    shots = (data.get("n-shot") or {}).get(task)
    if shots:
        found[f"n-shot:{task}"] = _text(shots)
    return found


def settings_key(settings: dict[str, str]) -> str:
    return json.dumps(settings, sort_keys=True)


def sample_count(data: dict, task: str) -> int | None:
    """How many documents of `task` were scored (lm-eval's effective count, after --limit)."""
    counts = (data.get("n-samples") or {}).get(task) or {}
    value = counts.get("effective", counts.get("original")) if isinstance(counts, dict) else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def differing(call: Sequence[dict[str, str]], tasks: Sequence[dict[str, dict[str, str]]]) -> list[dict[str, str]]:
    """For each entry (its call settings, its {task: task settings}), the settings whose values
    are not the same for every entry: call settings across all entries, a task's options across
    the entries that have that task (an option left out reads "default")."""
    shown: list[dict[str, str]] = [{} for _ in call]
    for key in sorted({key for settings in call for key in settings}):
        values = [settings.get(key, DEFAULT) for settings in call]
        if len(set(values)) > 1:
            for entry, value in zip(shown, values):
                entry[key] = value
    for task in sorted({task for by_task in tasks for task in by_task}):
        having = [i for i, by_task in enumerate(tasks) if task in by_task]
        for key in sorted({key for i in having for key in tasks[i][task]}):
            values = {i: tasks[i][task].get(key, DEFAULT) for i in having}
            if len(set(values.values())) > 1:
                for i, value in values.items():
                    shown[i][key] = value
    return shown


def settings_text(settings: dict[str, str]) -> str:
    return ", ".join(f"{key}={value}" for key, value in settings.items())


def samples_text(counts: dict[str, int | None]) -> str:
    """ "8" when every task scored as many documents, else "forgetting_curve:12, longmem_passkey:6"."""
    known = {task: n for task, n in sorted(counts.items()) if n is not None}
    if not known:
        return ""
    if len(set(known.values())) == 1:
        return str(next(iter(known.values())))
    return ", ".join(f"{task}:{n}" for task, n in known.items())


def compatible(existing: dict[str, dict[str, str]], incoming: Iterable[tuple[str, dict[str, str]]]) -> bool:
    """Whether a file's tasks can join a row: each task it has is absent from the row or set alike."""
    return all(existing.get(task, settings) == settings for task, settings in incoming)

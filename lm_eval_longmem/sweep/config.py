"""A sweep file (YAML) and command-line lists, checked and turned into a `SweepConfig`.

Every mistake is one `SweepConfigError` naming the file, the key and the valid choices; the
method names and arguments are checked later by the wrapper's own code (plan.py), so a sweep
reports exactly what `--model longmem` would.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

from lm_eval_longmem.errors import UsageError

DEFAULT_MODEL_TOKENS = (None, "default")
AUTO_BATCH_SIZE = re.compile(r"auto(:[1-9][0-9]*)?")  # lm-eval's `auto` and `auto:N` (N recomputations)


class SweepConfigError(UsageError):
    """A sweep file or a command-line list is missing, malformed or names an unknown key."""


@dataclasses.dataclass(frozen=True)
class MethodSpec:
    """One method and the argument settings to try it with (one run each)."""

    name: str
    settings: tuple[dict[str, Any], ...] = ({},)


@dataclasses.dataclass
class SweepConfig:
    tasks: list[str]
    models: list[dict[str, Any]] = dataclasses.field(default_factory=lambda: [{}])
    methods: list[MethodSpec] = dataclasses.field(default_factory=lambda: [MethodSpec("vanilla")])
    output_path: str = "sweep_results"
    per_task: bool = False
    metadata: dict[str, Any] = dataclasses.field(default_factory=dict)
    model_args: dict[str, Any] = dataclasses.field(default_factory=dict)
    limit: float | None = None
    batch_size: int | str | None = None
    device: str | None = None
    lm_eval_args: list[str] = dataclasses.field(default_factory=list)
    launcher: list[str] = dataclasses.field(default_factory=list)


# key -> what it holds, for the unknown-key message and `sweep --help`.
KEYS = {
    "tasks": "task names (or groups) evaluated together in each run; required",
    "models": "list of models: null/default (the embedded SmolLM2-135M-Instruct), a Hub id or folder, "
    "or a mapping of model args with pretrained",
    "methods": "list of methods: a name, or {name: NAME, args: {..} or [{..}, ..], grid: {arg: [values]}}",
    "output_path": "where results go, one folder per model and method (default sweep_results)",
    "per_task": "true: one run per task instead of one run for all tasks (default false)",
    "metadata": "mapping passed as lm_eval --metadata (task options, e.g. fc_max_length)",
    "model_args": "mapping added to every run's --model_args (dtype, max_length, ...)",
    "limit": "lm_eval --limit for every run",
    "batch_size": "lm_eval --batch_size",
    "device": "lm_eval --device (cpu, cuda, cuda:1, ...)",
    "lm_eval_args": "list of extra lm_eval arguments, e.g. [--log_samples]",
    "launcher": "command that runs a Python module instead of this Python, "
    "e.g. [accelerate, launch, --num_processes, 8]",
}
METHOD_KEYS = ("name", "args", "grid")


def load_sweep_file(path: str | Path) -> dict[str, Any]:
    """The raw mapping of a sweep file; one message for a missing, unreadable or non-mapping file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise SweepConfigError(
            f"No such sweep file: {path}. Pass a YAML file (examples: lm-eval-longmem sweep --examples), "
            "or give the grid on the command line with --tasks (and --methods, --models)."
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise SweepConfigError(f"{path} is not valid YAML: {err}") from None
    except RecursionError:  # PyYAML recurses once per level: `[[[[...` a few hundred deep
        raise SweepConfigError(f"{path}: lists or mappings nested too deeply to read") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SweepConfigError(
            f"{path}: the top level must be a mapping of keys ({', '.join(KEYS)}), got {type(data).__name__}"
        )
    return data


def build_config(raw: dict[str, Any], source: str = "the sweep") -> SweepConfig:
    """Check every key and value of a raw mapping (file contents merged with command-line values)."""
    unknown = _sorted_keys(set(raw) - set(KEYS))
    if unknown:
        valid = "\n".join(f"  {key}: {help}" for key, help in KEYS.items())
        raise SweepConfigError(f"{source}: unknown key(s) {', '.join(map(repr, unknown))}. Valid keys:\n{valid}")
    if not raw.get("tasks"):
        raise SweepConfigError(
            f"{source}: 'tasks' is required (a task name or a list of them), e.g. tasks: [forgetting_curve]"
        )
    config = SweepConfig(tasks=_names(raw["tasks"], "tasks", source))
    if raw.get("models") is not None:
        config.models = [_model(entry, source) for entry in _as_list(raw["models"])]
    if raw.get("methods") is not None:
        config.methods = [_method(entry, source) for entry in _as_list(raw["methods"])]
    if not config.models or not config.methods:
        raise SweepConfigError(f"{source}: 'models' and 'methods' must not be empty lists")
    for key in ("metadata", "model_args"):
        if raw.get(key) is not None:
            setattr(config, key, _mapping(raw[key], key, source))
    if "method" in config.model_args:
        raise SweepConfigError(f"{source}: put methods under 'methods', not model_args.method")
    if raw.get("output_path") is not None:
        config.output_path = _text(raw["output_path"], "output_path", source)
    if raw.get("per_task") is not None:
        if not isinstance(raw["per_task"], bool):
            raise SweepConfigError(f"{source}: per_task must be true or false, got {raw['per_task']!r}")
        config.per_task = raw["per_task"]
    if raw.get("limit") is not None:
        config.limit = _limit(raw["limit"], source)
    if raw.get("batch_size") is not None:
        size = raw["batch_size"]
        if not (isinstance(size, int) and not isinstance(size, bool) and size > 0) and not (
            isinstance(size, str) and AUTO_BATCH_SIZE.fullmatch(size)
        ):
            raise SweepConfigError(f"{source}: batch_size must be a positive integer, 'auto' or 'auto:N', got {size!r}")
        config.batch_size = size
    if raw.get("device") is not None:
        config.device = _text(raw["device"], "device", source)
    for key in ("lm_eval_args", "launcher"):
        if raw.get(key) is not None:
            values = raw[key]
            if isinstance(values, str):
                values = values.split()
            if not isinstance(values, list) or not all(isinstance(v, (str, int, float)) for v in values):
                raise SweepConfigError(f"{source}: {key} must be a list of strings, got {values!r}")
            setattr(config, key, [str(v) for v in values])
    check_task_options(config)
    return config


def check_task_options(config: SweepConfig) -> None:
    """The tasks' options (`metadata`, with each model's arguments, as lm-eval merges them) are
    checked now, as `lm_eval` checks them at start-up: a bad one fails the sweep once, before
    anything runs, not every run one after the other."""
    from lm_eval_longmem.harness.preflight import check_task_options as check

    for model in config.models:
        check(config.tasks, {**model, **config.model_args, **config.metadata})


def _limit(limit, source: str) -> float:
    """lm-eval reads a limit below 1 as a fraction of the documents and any other as a count (1.5
    would quietly be 1 document): a count must be a whole number."""
    if (
        isinstance(limit, bool)
        or not isinstance(limit, (int, float))
        or not math.isfinite(limit)
        or limit <= 0
        or (limit >= 1 and limit != int(limit))
    ):
        raise SweepConfigError(
            f"{source}: limit must be a positive number (a whole count, or a fraction below 1), got {limit!r}"
        )
    return float(limit)


def _text(value, key: str, source: str) -> str:
    """A folder or device name as written: YAML's numbers, dates and lists are not one."""
    if not isinstance(value, str) or not value.strip():
        raise SweepConfigError(f"{source}: {key} must be a non-empty string (quote it in YAML), got {value!r}")
    return value


def _sorted_keys(keys) -> list:
    """Unknown keys in a stable order, whatever YAML made of them (`1:` is an int, `null:` None)."""
    return sorted(keys, key=lambda key: (str(type(key)), str(key)))


def _as_list(value):
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _names(value, key: str, source: str) -> list[str]:
    names = []
    for item in _as_list(value):
        if not isinstance(item, str) or not item.strip():
            raise SweepConfigError(f"{source}: {key} must be names (strings), got {item!r}")
        names += [part.strip() for part in item.split(",") if part.strip()]
    return names


def _mapping(value, key: str, source: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise SweepConfigError(f"{source}: {key} must be a mapping of names to values, got {value!r}")
    try:
        json.dumps(value, allow_nan=False)  # as each run's command line will carry it (JSON has no nan)
    except (TypeError, ValueError, RecursionError):
        raise SweepConfigError(
            f"{source}: {key} must hold plain values (numbers, strings, lists), got {value!r}"
        ) from None
    return dict(value)


def _model(entry, source: str) -> dict[str, Any]:
    """A model entry as model args: {} for the embedded default, else at least `pretrained`."""
    if entry in DEFAULT_MODEL_TOKENS:
        return {}
    if isinstance(entry, str):
        return {"pretrained": _text(entry, "a models entry", source)}
    if isinstance(entry, dict):
        args = _mapping(entry, "a models entry", source)
        if "method" in args:
            raise SweepConfigError(f"{source}: a models entry sets method= ({entry!r}); put methods under 'methods'")
        if args.get("pretrained") in DEFAULT_MODEL_TOKENS:
            args.pop("pretrained", None)
        else:
            _text(args["pretrained"], "a models entry's pretrained", source)
        return args
    raise SweepConfigError(
        f"{source}: each models entry must be null/default, a model id or folder, or a mapping, got {entry!r}"
    )


def _method(entry, source: str) -> MethodSpec:
    if isinstance(entry, str):
        return parse_method_token(entry, source)
    if not isinstance(entry, dict):
        raise SweepConfigError(
            f"{source}: each methods entry must be a name or a mapping with {', '.join(METHOD_KEYS)}, got {entry!r}"
        )
    unknown = _sorted_keys(set(entry) - set(METHOD_KEYS))
    if unknown or not isinstance(entry.get("name"), str):
        raise SweepConfigError(
            f"{source}: methods entry {entry!r}: "
            + (f"unknown key(s) {', '.join(map(repr, unknown))}; " if unknown else "")
            + "valid keys: name (required), args (a mapping or a list of mappings: one run each), "
            "grid (a mapping of argument -> list of values: one run per combination)"
        )
    name = entry["name"]
    args = entry.get("args")
    base = [
        _mapping(a, f"methods[{name}].args", source) for a in ([{}] if args is None or args == [] else _as_list(args))
    ]
    grid = _mapping({} if entry.get("grid") is None else entry["grid"], f"methods[{name}].grid", source)
    combos = [{}]
    for arg, values in grid.items():
        values = _as_list(values)
        if not values:
            raise SweepConfigError(f"{source}: methods[{name}].grid.{arg} is an empty list")
        combos = [{**c, arg: v} for c in combos for v in values]
    settings = tuple({**b, **c} for b in base for c in combos)
    return MethodSpec(name, settings)


def parse_method_token(token: str, source: str = "--methods") -> MethodSpec:
    """`NAME` or `NAME:key=value,key=value` (command line) as a MethodSpec."""
    name, _, args = token.partition(":")
    if not name.strip():
        raise SweepConfigError(f"{source}: {token!r} names no method (write NAME or NAME:key=value,key=value)")
    return MethodSpec(name.strip(), (parse_key_values(args, source) if args else {},))


def parse_key_values(text: str | list[str], source: str) -> dict[str, Any]:
    """`k=v,k=v` (or several `k=v` words, or a JSON object) parsed as lm-eval parses them."""
    from lm_eval._cli.utils import key_val_to_dict, try_parse_json  # the parsers lm-eval uses

    parts = [text] if isinstance(text, str) else list(text)
    result: dict[str, Any] = {}
    for part in parts:
        try:
            parsed = try_parse_json(part)
            result.update(parsed if isinstance(parsed, dict) else key_val_to_dict(part))
        except (ValueError, SyntaxError) as err:
            raise SweepConfigError(f"{source}: cannot read {part!r} as key=value pairs ({err})") from None
        except RecursionError:  # json.loads recurses once per `[`
            raise SweepConfigError(f"{source}: cannot read a value nested this deeply as key=value pairs") from None
    return result

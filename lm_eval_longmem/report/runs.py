"""Who produced a results file: model, method and method arguments, and when.

A comparison needs to tell runs apart and to recognise two files as the same run (an
interrupted sweep re-run, forgetting curve and passkey evaluated in separate calls). The
results JSON records `--model_args` as the user typed them and, for `--model longmem`, the
method with all its resolved arguments (`config.longmem_*`, from the wrapper's
`get_model_info`). The identity uses the resolved values, so `factor=4` and `factor=4.0`
match; labels show only what the user chose, so a legend reads "yarn (factor=4)" rather
than every default of the method. The exception is a method that names the checkpoint it ran
(`LongMemMethod.checkpoint_identity`, asked without importing torch): `fox` runs whatever
FoX-family architecture the checkpoint has, and its label names that architecture from the
recorded switches ("fox (architecture=transformer-pro)", fox_architecture.py), so FoX and its
Transformer baseline never read alike.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from lm_eval_longmem.harness.run_name import GENERIC_LEAF
from lm_eval_longmem.models.method_registry.checkpoint_identity import checkpoint_identity_of

# `--model_args` that place or batch the model, or add keys to its results (by_length), without
# changing what it computes: runs that differ only in them are one run.
PLACEMENT_ARGS = frozenset(
    {
        "pretrained",
        "method",
        "device",
        "device_map",
        "batch_size",
        "max_batch_size",
        "parallelize",
        "max_memory_per_gpu",
        "max_cpu_memory",
        "offload_folder",
        "trust_remote_code",
        "reuse_prefix",
        "by_length",
        "revision",
        "cache_dir",
    }
)
# Set in memory (never written) by the plots' run discovery on a file whose evaluation settings
# differ from another plotted run's: {setting: value}, shown in the run's labels.
SHOWN_SETTINGS_KEY = "__lm_eval_longmem_shown_settings__"
_FILE_DATE = re.compile(r"results_(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)")


@dataclass(frozen=True)
class RunInfo:
    """One results file's run: what was evaluated (identity) and what to call it."""

    model: str
    method: str
    arguments: dict[str, str]  # the user's own choices, for display
    identity: tuple[str, str, str]  # (model, method, canonical resolved arguments)
    date: float  # seconds since the epoch; orders runs of one identity
    source: Path
    data: dict = field(repr=False, compare=False)
    settings: dict[str, str] = field(default_factory=dict, compare=False)  # shown: differ from compared runs

    @property
    def arguments_text(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.arguments.items())

    @property
    def label(self) -> str:
        return label_of(self.model, self.method, self.arguments) + self._settings_note

    @property
    def variant(self) -> str:
        """ "yarn (factor=4)": the method and the arguments the user chose (and, beside other
        runs evaluated differently, " [limit=1]": the settings that differ)."""
        return (f"{self.method} ({self.arguments_text})" if self.arguments else self.method) + self._settings_note

    @property
    def short_label(self) -> str:
        """The label with a local checkpoint path reduced to its folder name, for legends."""
        return label_of(short_model_name(self.model), self.method, self.arguments) + self._settings_note

    @property
    def _settings_note(self) -> str:
        return " [" + ", ".join(f"{k}={v}" for k, v in self.settings.items()) + "]" if self.settings else ""


def describe_run(data: dict[str, Any], source: Path) -> RunInfo:
    config = data.get("config") or {}
    model_args = model_args_dict(config.get("model_args"))
    model = str(
        config.get("longmem_pretrained")
        or model_args.get("pretrained")
        or data.get("model_name")
        or config.get("model")
        or "unknown"
    )
    method = str(config.get("longmem_method") or config.get("model") or "hf")
    method_args = config.get("longmem_method_args") or {}
    checkpoint = checkpoint_identity_of(method, lambda: method_args)
    chosen = {key: _text(value) for key, value in {**checkpoint, **model_args}.items() if key not in PLACEMENT_ARGS}
    resolved = dict(chosen)
    resolved.update({key: _text(value) for key, value in method_args.items()})
    identity = (model, method, json.dumps(resolved, sort_keys=True))
    shown = dict(data.get(SHOWN_SETTINGS_KEY) or {})
    return RunInfo(model, method, chosen, identity, run_date(data, source), source, data, shown)


def run_label(config: dict[str, Any]) -> str:
    """Name a run "<model> · <method> (k=v, ...)", e.g. "SmolLM2-135M-Instruct · yarn (factor=4)".

    `--model hf` runs record no method, so they read as "<model> · hf".
    """
    return describe_run({"config": config}, Path()).label


def label_of(model: str, method: str, arguments: dict[str, str]) -> str:
    label = f"{model} · {method}"
    if arguments:
        label += " (" + ", ".join(f"{key}={value}" for key, value in arguments.items()) + ")"
    return label


def short_model_name(model: str) -> str:
    """ "/data/ckpt/run7" -> "run7", "/data/ckpt/run7/export" -> "run7/export" (a generic last
    folder keeps its parent, as in run folder names, so two exports never read as one model);
    Hub ids ("org/name") and plain names unchanged."""
    if model.startswith(("/", "./", "../", "~")) or "\\" in model:
        parts = [part for part in model.replace("\\", "/").split("/") if part not in ("", ".", "..", "~")]
        if not parts:
            return model
        return "/".join(parts[-2:]) if len(parts) > 1 and GENERIC_LEAF.match(parts[-1]) else parts[-1]
    return model


def unambiguous_model_names(models: Iterable[str]) -> dict[str, str]:
    """Each model's `short_model_name`, with as many more trailing folders as it takes to tell
    apart two local paths that shorten alike (".../a/export" and ".../b/export" stay "a/export"
    and "b/export"; ".../x/run7" and ".../y/run7" become "x/run7" and "y/run7")."""
    models = sorted(set(models))
    names = {model: short_model_name(model) for model in models}
    depth = 1
    while True:
        clashing = [m for m in models if sum(names[m] == names[o] for o in models) > 1]
        if not clashing:
            return names
        depth += 1
        for model in clashing:
            parts = [part for part in model.replace("\\", "/").split("/") if part not in ("", ".", "..", "~")]
            names[model] = "/".join(parts[-depth:]) if depth < len(parts) else model


def model_args_dict(model_args: dict[str, Any] | str | None) -> dict[str, Any]:
    """lm-eval records `--model_args` either as a dict or as the raw "k=v,k=v" string."""
    if isinstance(model_args, dict):
        return model_args
    if not model_args or not isinstance(model_args, str):
        return {}
    pairs = (item.split("=", 1) for item in model_args.split(",") if "=" in item)
    return {key.strip(): value.strip() for key, value in pairs}


def run_date(data: dict[str, Any], source: Path) -> float:
    """When the run started: lm-eval's `date`, else the file name's timestamp, else its mtime."""
    date = data.get("date")
    if isinstance(date, (int, float)) and not isinstance(date, bool):
        return float(date)
    match = _FILE_DATE.search(source.name)
    if match:
        try:
            return datetime.strptime(match.group(1).split(".")[0], "%Y-%m-%dT%H-%M-%S").timestamp()
        except ValueError:
            pass
    try:
        return source.stat().st_mtime
    except OSError:
        return 0.0


def _text(value: Any) -> str:
    """One spelling per value: 4, 4.0 and "4" are the same argument."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        if value.lower() in ("true", "false"):
            return value.lower()
        try:
            number = float(value)
        except ValueError:
            return value
        return str(int(number)) if number.is_integer() and "e" not in value.lower() else value
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=True)
    return str(value)

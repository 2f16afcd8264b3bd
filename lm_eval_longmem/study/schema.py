"""A study file (YAML) checked and turned into a `Study`.

Every mistake is one `StudyConfigError` naming the file, the key and what is valid. Recipes are
checked by the training module itself with the study's budget applied (budget.py), methods by
the wrapper's own parsing (plan.py), the suite's options by the tasks (suite.py): a study
reports exactly what `train` and `lm_eval` would, before anything runs.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from lm_eval_longmem.errors import UsageError


class StudyConfigError(UsageError):
    """A study file is missing, malformed, or names an unknown key, method, recipe or column."""


@dataclasses.dataclass(frozen=True)
class Budget:
    """What every trained row shares: tokens (or steps) at one length and batch, one data
    source, one seed, and any recipe keys set for all (`recipe_keys`)."""

    seq_len: int
    tokens: int | None = None
    steps: int | None = None
    micro_batch_size: int = 1
    grad_accum_steps: int = 1
    processes: int = 1
    data: str | None = None
    seed: int = 42
    recipe_keys: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Row:
    """One method of the study: trained from a recipe, or training-free on the base."""

    label: str
    recipe: str | None = None  # trained rows
    method: str | None = None  # training-free rows
    args: dict[str, Any] = dataclasses.field(default_factory=dict)  # method arguments at evaluation
    exact: bool | None = None  # exact attention; None: asked of the method
    seq_len: int | None = None  # a trained row's own length (same tokens), as the study trains Landmark
    recipe_keys: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def trained(self) -> bool:
        return self.recipe is not None


@dataclasses.dataclass(frozen=True)
class Evaluation:
    device: str | None = None
    batch_size: int | str | None = None
    limit: float | None = None
    model_args: dict[str, Any] = dataclasses.field(default_factory=dict)
    lm_eval_args: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Study:
    source: str
    output_path: Path
    base: dict[str, Any]  # model args of the base: {} is the embedded default model
    budget: Budget | None
    rows: tuple[Row, ...]
    suite: dict[str, dict[str, Any]]  # column -> its options (suite.py)
    evaluation: Evaluation
    train_launcher: tuple[str, ...] = ()
    eval_launcher: tuple[str, ...] = ()
    base_parameters: float | None = None  # for time estimates when the base's config is not here


KEYS = {
    "output_path": "where trained models, results and tables go (default: study_<file name>)",
    "base": "the base model: default (the embedded SmolLM2-135M), a Hub id or folder, or a mapping of model args",
    "base_parameters": "the base's parameter count, for time estimates when its config is not on this machine",
    "budget": "what every trained row shares: tokens or steps, seq_len, micro_batch_size, grad_accum_steps, "
    "processes, data, seed, recipe_keys",
    "methods": "the rows: {recipe: NAME} (trained) or {method: NAME, args: {..}} (training-free), each with label",
    "suite": "the columns: ppl, needle, mshots, longbench, ruler, each with its lengths",
    "evaluation": "device, batch_size, limit, model_args, lm_eval_args of every lm_eval run",
    "launcher": "command that starts training and evaluation (a list), or {train: [..], eval: [..]}",
}
BUDGET_KEYS = (
    "tokens",
    "steps",
    "seq_len",
    "micro_batch_size",
    "grad_accum_steps",
    "processes",
    "data",
    "seed",
    "recipe_keys",
)
ROW_KEYS = ("label", "recipe", "method", "args", "exact", "seq_len", "recipe_keys")
EVALUATION_KEYS = ("device", "batch_size", "limit", "model_args", "lm_eval_args")
LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def load_study_file(path: str | Path) -> dict[str, Any]:
    """The raw mapping of a study file; one message for a missing, unreadable or non-mapping file."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise StudyConfigError(
            f"No such study file: {path}. Pass a YAML file or a shipped study's name "
            "(lm-eval-longmem study --examples)."
        )
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError) as err:
        raise StudyConfigError(f"{path} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise StudyConfigError(f"{path}: the top level must be a mapping of keys ({', '.join(KEYS)})")
    return data


def build_study(raw: dict[str, Any], source: str, default_name: str = "study") -> Study:
    """Check every key of a raw study mapping (recipes, methods and task options come later)."""
    _refuse_unknown(raw, KEYS, source, "")
    if not raw.get("methods"):
        raise StudyConfigError(f"{source}: 'methods' is required: a list of rows, e.g. [{{method: vanilla}}]")
    if not raw.get("suite"):
        raise StudyConfigError(f"{source}: 'suite' is required: a mapping of columns, e.g. {{ppl: {{lengths: [512]}}}}")
    rows = tuple(_row(entry, i, source) for i, entry in enumerate(_list(raw["methods"], "methods", source)))
    labels = [row.label for row in rows]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise StudyConfigError(f"{source}: method labels must differ, {', '.join(repeated)} repeats (give label:)")
    budget = _budget(raw.get("budget"), source) if raw.get("budget") is not None else None
    if budget is None and any(row.trained for row in rows):
        raise StudyConfigError(
            f"{source}: rows {', '.join(r.label for r in rows if r.trained)} train, so the study needs a 'budget' "
            "(tokens or steps, and seq_len) shared by all of them"
        )
    train_launcher, eval_launcher = _launcher(raw.get("launcher"), source)
    suite = _mapping(raw["suite"], "suite", source)
    for column, options in suite.items():
        suite[column] = _mapping({} if options is None else options, f"suite.{column}", source)
    output = raw.get("output_path") or f"study_{default_name}"
    if not isinstance(output, str):
        raise StudyConfigError(f"{source}: output_path must be a folder name (a string), got {output!r}")
    parameters = raw.get("base_parameters")
    if parameters is not None and (isinstance(parameters, bool) or not isinstance(parameters, (int, float))):
        raise StudyConfigError(f"{source}: base_parameters must be a number (e.g. 6740000000), got {parameters!r}")
    return Study(
        source=source,
        output_path=Path(output),
        base=_base(raw.get("base"), source),
        budget=budget,
        rows=rows,
        suite=suite,
        evaluation=_evaluation(raw.get("evaluation") or {}, source),
        train_launcher=train_launcher,
        eval_launcher=eval_launcher,
        base_parameters=float(parameters) if parameters is not None else None,
    )


def _refuse_unknown(raw: dict, valid, source: str, where: str) -> None:
    unknown = sorted(map(str, set(raw) - set(valid)))
    if unknown:
        raise StudyConfigError(
            f"{source}: unknown key(s) {', '.join(map(repr, unknown))}{' in ' + where if where else ''}; "
            f"valid: {', '.join(valid)}"
        )


def _list(value, key: str, source: str) -> list:
    if not isinstance(value, list):
        raise StudyConfigError(f"{source}: {key} must be a list, got {value!r}")
    return value


def _mapping(value, key: str, source: str) -> dict[str, Any]:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise StudyConfigError(f"{source}: {key} must be a mapping of names to values, got {value!r}")
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        raise StudyConfigError(f"{source}: {key} must hold plain values (numbers, strings, lists)") from None
    return dict(value)


def _positive(value, key: str, source: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise StudyConfigError(f"{source}: {key} must be a positive whole number, got {value!r}")
    return value


def _base(value, source: str) -> dict[str, Any]:
    if value in (None, "default"):
        return {}
    if isinstance(value, str) and value.strip():
        return {"pretrained": value}
    if isinstance(value, dict):
        args = _mapping(value, "base", source)
        if "method" in args:
            raise StudyConfigError(f"{source}: base sets method=; methods are the rows, under 'methods'")
        if args.get("pretrained") in (None, "default"):
            args.pop("pretrained", None)
        return args
    raise StudyConfigError(f"{source}: base must be default, a Hub id or folder, or a mapping, got {value!r}")


def _budget(value, source: str) -> Budget:
    raw = _mapping(value, "budget", source)
    _refuse_unknown(raw, BUDGET_KEYS, source, "budget")
    if (raw.get("tokens") is None) == (raw.get("steps") is None):
        raise StudyConfigError(f"{source}: budget needs tokens or steps (one of them), e.g. tokens: 1000000000")
    if raw.get("seq_len") is None:
        raise StudyConfigError(f"{source}: budget needs seq_len, the training length every trained row packs to")
    numbers = {
        k: _positive(raw[k], f"budget.{k}", source)
        for k in ("tokens", "steps", "seq_len", "micro_batch_size", "grad_accum_steps", "processes")
        if raw.get(k) is not None
    }
    seed = raw.get("seed", 42)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise StudyConfigError(f"{source}: budget.seed must be a whole number from 0 to 2**32-1, got {seed!r}")
    data = raw.get("data")
    if data is not None and (not isinstance(data, str) or not data.strip()):
        raise StudyConfigError(f"{source}: budget.data must be a data source name or path, got {data!r}")
    return Budget(
        **numbers,
        data=data,
        seed=seed,
        recipe_keys=_mapping(raw.get("recipe_keys") or {}, "budget.recipe_keys", source),
    )


def _row(entry, index: int, source: str) -> Row:
    if isinstance(entry, str):
        entry = {"method": entry}
    where = f"methods[{index}]"
    if not isinstance(entry, dict):
        raise StudyConfigError(f"{source}: {where} must be a method name or a mapping of {', '.join(ROW_KEYS)}")
    _refuse_unknown(entry, ROW_KEYS, source, where)
    recipe, method = entry.get("recipe"), entry.get("method")
    if (recipe is None) == (method is None):
        raise StudyConfigError(
            f"{source}: {where} needs recipe: NAME (a trained row) or method: NAME (a training-free row), one of them"
        )
    name = recipe if recipe is not None else method
    if not isinstance(name, str) or not name.strip():
        raise StudyConfigError(f"{source}: {where}: the recipe or method must be a name, got {name!r}")
    label = entry.get("label", Path(name).stem if recipe is not None else name)
    if not isinstance(label, str) or not LABEL.fullmatch(label):
        raise StudyConfigError(
            f"{source}: {where}: label {label!r} must be a short name of letters, digits, '.', '_', '+', '-'"
        )
    exact = entry.get("exact")
    if exact is not None and not isinstance(exact, bool):
        raise StudyConfigError(f"{source}: {where}: exact must be true or false, got {exact!r}")
    if recipe is None and (entry.get("seq_len") is not None or entry.get("recipe_keys")):
        raise StudyConfigError(f"{source}: {where}: seq_len and recipe_keys belong to trained rows (recipe:)")
    return Row(
        label=label,
        recipe=recipe,
        method=method,
        args=_mapping(entry.get("args") or {}, f"{where}.args", source),
        exact=exact,
        seq_len=_positive(entry["seq_len"], f"{where}.seq_len", source) if entry.get("seq_len") is not None else None,
        recipe_keys=_mapping(entry.get("recipe_keys") or {}, f"{where}.recipe_keys", source),
    )


def _evaluation(value, source: str) -> Evaluation:
    raw = _mapping(value, "evaluation", source)
    _refuse_unknown(raw, EVALUATION_KEYS, source, "evaluation")
    extra = raw.get("lm_eval_args") or []
    if isinstance(extra, str):
        extra = extra.split()
    if not isinstance(extra, list):
        raise StudyConfigError(f"{source}: evaluation.lm_eval_args must be a list of strings")
    limit = raw.get("limit")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0):
        raise StudyConfigError(f"{source}: evaluation.limit must be a positive number, got {limit!r}")
    model_args = _mapping(raw.get("model_args") or {}, "evaluation.model_args", source)
    if "method" in model_args or "pretrained" in model_args:
        raise StudyConfigError(f"{source}: evaluation.model_args cannot set method or pretrained (rows and base do)")
    _check_lm_eval_reads(model_args, raw.get("device"), source)
    return Evaluation(
        device=raw.get("device"),
        batch_size=raw.get("batch_size"),
        limit=float(limit) if limit is not None else None,
        model_args=model_args,
        lm_eval_args=tuple(str(a) for a in extra),
    )


# How a study file spells the lm_eval options that may not repeat inside evaluation.model_args.
STUDY_OPTIONS = {"device": "evaluation.device:", "batch_size": "evaluation.batch_size:"}


def _check_lm_eval_reads(model_args: dict, device, source: str) -> None:
    """What each evaluation's `lm_eval` refuses at start-up (harness/run_options.py), refused
    while the study file is read: `device`/`batch_size` inside model_args, a dtype torch lacks, a
    device lm-eval's Hugging Face model would ignore."""
    from types import SimpleNamespace

    from lm_eval_longmem.errors import UsageError
    from lm_eval_longmem.harness import run_options

    try:
        args = SimpleNamespace(model="longmem", model_args=model_args, max_batch_size=None)
        run_options.check_model_args(args, STUDY_OPTIONS)
        run_options.check_device("longmem", device)
    except UsageError as err:
        raise StudyConfigError(f"{source}: evaluation: {err}") from None


def _launcher(value, source: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(training launcher, evaluation launcher): one list for both, or {train: .., eval: ..}."""
    if value is None:
        return (), ()
    if isinstance(value, dict):
        _refuse_unknown(value, ("train", "eval"), source, "launcher")
        return _command(value.get("train"), "launcher.train", source), _command(
            value.get("eval"), "launcher.eval", source
        )
    both = _command(value, "launcher", source)
    return both, both


def _command(value, key: str, source: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = value.split()
    if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value) or not value:
        raise StudyConfigError(f"{source}: {key} must be a command as a list, e.g. [accelerate, launch]")
    return tuple(str(v) for v in value)

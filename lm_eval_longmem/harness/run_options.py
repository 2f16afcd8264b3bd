"""lm-eval's own `run` options, checked before anything loads.

lm-eval 0.4.13's parser accepts values that fail later, deep inside it, with a traceback: a
`--limit` of `nan`, `inf`, 0, a negative number or `1e30` (islice refuses it after the model
loaded), `--batch_size abc`, `0` or `auto:x`, `--gen_kwargs max_gen_toks=abc` or `until=5`,
`--tasks` naming a YAML file that is not there, does not parse or is not a task, an empty
`--tasks ,`, `--metadata max_length=abc`, `--log_samples` without `--output_path`, `--model_args device=cpu` or
`batch_size=2` (lm-eval passes its own `--device` and `--batch_size` as well: the model gets each
twice), `--model_args dtype=float8` for a Hugging Face model; and values it runs other than as
typed (`--limit 2.5` as 2, a negative `--num_fewshot` ignored, as is any `--num_fewshot` for our
tasks, which fix it at 0; `--device tpu` read as no device). Each is
one `UsageError` here (exit status 2), naming the option, the value and the form expected.
Values lm-eval can use are left exactly as they are: this only refuses.

`check(args)` reads the namespace lm-eval's parser made; preflight.py calls it first, for
every model (these are lm-eval's options, not ours).
"""

from __future__ import annotations

import glob
import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.harness.run_arguments import task_names


def check(args) -> None:
    check_limit(getattr(args, "limit", None))
    check_num_fewshot(getattr(args, "num_fewshot", None))
    check_num_fewshot_applies(getattr(args, "num_fewshot", None), task_names(getattr(args, "tasks", None)))
    check_batch_size(getattr(args, "batch_size", None))
    check_max_batch_size(getattr(args, "max_batch_size", None))
    check_gen_kwargs(getattr(args, "gen_kwargs", None))
    check_lengths_metadata(getattr(args, "model_args", None), getattr(args, "metadata", None))
    check_tasks(getattr(args, "tasks", None))
    check_samples_destination(args)
    check_include_path(getattr(args, "include_path", None))
    check_model_args(args)
    check_device(getattr(args, "model", None), getattr(args, "device", None))


# `--model_args` keys that lm-eval 0.4.13 also passes to the model from its own options (evaluator.py's
# `additional_config`), so the model's constructor gets them twice and fails with a TypeError.
# `max_batch_size` collides only when --max_batch_size is given too (lm-eval drops its None).
OWN_OPTIONS_IN_MODEL_ARGS = {"device": "--device", "batch_size": "--batch_size", "max_batch_size": "--max_batch_size"}
# lm-eval's Hugging Face models (HFLM and its aliases) and ours, which read `dtype` and `--device` as HFLM does.
HF_MODELS = ("hf", "hf-auto", "huggingface", "longmem")
DTYPE_ARGUMENTS = ("dtype", "softmax_dtype", "mixed_precision_dtype")


def check_model_args(args, spelled: dict[str, str] | None = None) -> None:
    """`--model_args device=cpu` or `batch_size=4` (HFLM's own docstring lists both as its
    arguments) gets a TypeError from lm-eval 0.4.13's command line, which passes `--device` and
    `--batch_size` to every model as well; a `dtype` HFLM cannot read is an AttributeError from
    `getattr(torch, dtype)` after the task index is built. `spelled`: how the caller's command
    line spells lm-eval's options (the sweep's `--batch-size`, a study file's `evaluation.batch_size:`)."""
    from lm_eval_longmem.harness.run_arguments import arguments_dict

    model_args = arguments_dict(getattr(args, "model_args", None))
    for key, option in OWN_OPTIONS_IN_MODEL_ARGS.items():
        if key not in model_args or (key == "max_batch_size" and getattr(args, "max_batch_size", None) is None):
            continue
        value = _shown(model_args[key])
        raise UsageError(
            f"argument --model_args: {key}={value}: lm_eval passes {key} to the model from its own {option} as "
            f"well, so the model would get it twice; give it as {(spelled or {}).get(key, option)} {value} instead."
        )
    if getattr(args, "model", None) in HF_MODELS:
        for key in DTYPE_ARGUMENTS:
            if key in model_args:
                check_dtype(key, model_args[key])


def check_dtype(key: str, value: Any) -> None:
    """HFLM reads a dtype as `getattr(torch, value)` ("auto" aside)."""
    text = str(value)
    if text == "auto":
        return
    import torch

    if not isinstance(getattr(torch, text, None), torch.dtype):
        raise UsageError(
            f"argument --model_args: {key}={_shown(value)} is not a torch dtype: expected auto (the checkpoint's) "
            "or a torch dtype name such as float32, float16 or bfloat16."
        )


# The devices HFLM takes as typed (lm_eval/models/huggingface.py); any other value it reads as "no
# device given" and runs on CUDA when there is one, else the CPU, saying so only at INFO level.
DEVICE_FORMS = ("cpu", "cuda", "cuda:N", "mps", "mps:0", "npu:N", "xpu:N", "hpu:N")


def check_device(model: str | None, device: Any) -> None:
    if model not in HF_MODELS or device is None or str(device) == "auto":
        return
    text = str(device)
    if text in ("cpu", "cuda", "mps", "mps:0") or re.fullmatch(r"(cuda|npu|xpu|hpu):\d+", text):
        return
    raise UsageError(
        f"argument --device: {text!r} is not a device lm-eval's Hugging Face models use (they would ignore it and "
        f"pick one themselves): expected {', '.join(DEVICE_FORMS)}."
    )


def check_include_path(include_path: Any) -> None:
    """`--include_path /no/such` is indexed as an empty folder by lm-eval, which then reports only
    the task it did not find there; the path itself is the mistake."""
    paths = include_path if isinstance(include_path, (list, tuple)) else [include_path]
    for path in paths:
        if path is not None and not os.path.exists(os.path.expanduser(str(path))):
            raise UsageError(
                f"argument --include_path: {path}: no such file or directory; expected a folder of task YAML files."
            )


def check_samples_destination(args) -> None:
    """lm-eval refuses `--log_samples` / `--predict_only` without `--output_path` with a ValueError
    from deep inside its argument validation; it is a wrong command line."""
    if getattr(args, "output_path", None):
        return
    for flag in ("log_samples", "predict_only"):
        if getattr(args, flag, False):
            raise UsageError(
                f"argument --{flag}: the samples need a place: add --output_path DIR "
                "(lm-eval writes the results and samples_<task>_<date>.jsonl files there)."
            )


LIMIT_FORMS = "a number of documents per task (a whole number, 1 or more) or a fraction of them (above 0, below 1)"


def check_limit(limit: float | None) -> None:
    """lm-eval reads a limit below 1 as a fraction and any other as a count (islice's stop)."""
    if limit is None:
        return
    fraction = 0 < limit < 1
    count = 1 <= limit <= sys.maxsize and float(limit).is_integer()
    if not (fraction or count):
        raise UsageError(f"argument --limit: {_number(limit)} is not a limit: expected {LIMIT_FORMS}.")


def check_num_fewshot(num_fewshot: int | None) -> None:
    if num_fewshot is not None and num_fewshot < 0:
        raise UsageError(
            f"argument --num_fewshot: {num_fewshot} is negative: expected 0 or more examples in each prompt."
        )


FEWSHOT_HINTS = {"longmem_trec_manyshot": "its demonstrations are --metadata trec_shots=[...]"}


def check_num_fewshot_applies(num_fewshot: int | None, tasks: list[str]) -> None:
    """Our tasks fix `num_fewshot: 0` (their prompts are built whole, many-shot TREC's
    demonstrations included), and lm-eval then ignores `--num_fewshot` for them with an INFO line
    while the results header still says `num_fewshot: N`. A run of only our tasks would ignore
    the option entirely: a wrong command line. Beside other tasks it applies to those: a warning."""
    if not num_fewshot:
        return
    from lm_eval_longmem.tasks import registry

    ours, others = [], []
    for requested in tasks:
        members = [task for task, _ in registry.group_entries(requested)] or [requested]
        for task in members:
            (ours if registry.find(task) is not None else others).append(task)
    if not ours:
        return
    hints = "".join(f"; for {task}, {FEWSHOT_HINTS[task]}" for task in ours if task in FEWSHOT_HINTS)
    message = (
        f"{num_fewshot} does not apply to {', '.join(ours)}: these tasks build their prompts whole and take no "
        f"few-shot examples{hints}"
    )
    if not others:
        raise UsageError(f"argument --num_fewshot: {message}. Leave --num_fewshot out.")
    import logging

    logging.getLogger(__name__).warning("--num_fewshot %s; it applies to %s only.", message, ", ".join(others))


BATCH_SIZE_FORMS = "a whole number of 1 or more, 'auto', or 'auto:N' (re-detect the size N times, N above 0)"


def check_batch_size(batch_size: Any) -> None:
    """HFLM's reading of `--batch_size` (and vLLM's): an integer, or auto[:N] with N a float."""
    if batch_size is None:
        return
    text = str(batch_size).strip()
    if text.startswith("auto"):
        _, colon, schedule = text.partition(":")
        if text == "auto" or (colon and _positive_number(schedule)):
            return
    elif text.isdecimal() and int(text) >= 1:  # what int() reads, signs aside
        return
    raise UsageError(f"argument --batch_size: {text!r} is not a batch size: expected {BATCH_SIZE_FORMS}.")


def check_max_batch_size(max_batch_size: int | None) -> None:
    if max_batch_size is not None and max_batch_size < 1:
        raise UsageError(f"argument --max_batch_size: {max_batch_size} is not a batch size: expected 1 or more.")


# The generation arguments lm-eval's models read themselves (lm_eval.models.utils and HFLM), with
# what each must be; any other key goes to the model's generate() as typed.
GEN_KWARGS = {
    "max_gen_toks": (int, 1, "a whole number of tokens, 1 or more"),
    "max_new_tokens": (int, 1, "a whole number of tokens, 1 or more"),
    "temperature": (float, 0, "a number, 0 or more (0: greedy)"),
    "top_p": (float, 0, "a number above 0, at most 1"),
    "top_k": (int, 0, "a whole number, 0 or more"),
    "do_sample": (bool, None, "true or false"),
}


def check_gen_kwargs(gen_kwargs: Any) -> None:
    if not isinstance(gen_kwargs, dict):
        return
    from lm_eval_longmem.common.typed_values import coerce

    read = {}
    for key, value in gen_kwargs.items():
        if key == "until":
            if isinstance(value, str) or (isinstance(value, list) and all(isinstance(s, str) for s in value)):
                continue
            raise UsageError(
                f"argument --gen_kwargs: until={_shown(value)} is not a stop sequence: expected a text or a list "
                "of texts, such as until='\\n' or until=['\\n\\n','Question:']."
            )
        if key not in GEN_KWARGS:
            continue
        kind, minimum, form = GEN_KWARGS[key]
        try:
            read[key] = coerce(value, kind)
            fits = minimum is None or read[key] >= minimum
            fits = fits and not (key == "top_p" and not 0 < read[key] <= 1)
        except ValueError:
            fits = False
        if not fits or (kind is not bool and isinstance(value, bool)):
            raise UsageError(f"argument --gen_kwargs: {key}={_shown(value)} is not usable: expected {form}.")
    if read.get("do_sample") is True and read.get("temperature") == 0:
        raise UsageError(
            "argument --gen_kwargs: do_sample=true with temperature=0 cannot sample: give a temperature above 0, "
            "or do_sample=false for greedy decoding."
        )


def check_lengths_metadata(model_args: Any, metadata: Any) -> None:
    """`max_length` reaches tasks through `--metadata` merged over `--model_args` (lm-eval merges
    them); every task of ours sizes its inputs by it, reading it as an integer."""
    from lm_eval_longmem.common.typed_values import coerce
    from lm_eval_longmem.harness.run_arguments import arguments_dict

    for option, given in (("--model_args", model_args), ("--metadata", metadata)):
        value = arguments_dict(given).get("max_length")
        if value is None:
            continue
        try:
            fits = not isinstance(value, bool) and coerce(value, int) >= 1
        except ValueError:
            fits = False
        if not fits:
            raise UsageError(
                f"argument {option}: max_length={_shown(value)} is not a length: expected a whole number of "
                "tokens, 1 or more (the longest input the model may take)."
            )


def check_tasks(tasks: Any) -> None:
    """What lm-eval reads itself from `--tasks`: task YAML files (globs too) and a folder of them.
    Names are left to lm-eval's index (cli_mistakes.py answers a misspelled one)."""
    names = task_names(tasks)
    if tasks is not None and not names:
        raise UsageError("argument --tasks: no task named: expected task names, groups or YAML files.")
    for name in names:
        if name.endswith(".yaml"):
            paths = sorted(glob.glob(str(Path(name).absolute())))
            if not paths:
                raise UsageError(f"argument --tasks: no task file matches {name} (a task YAML path, or a glob).")
            for path in paths:
                check_task_file(name, path)
    if len(names) == 1 and Path(names[0]).is_dir():
        check_task_folder(names[0])


def check_task_file(name: str, path: str) -> None:
    """The file reads as lm-eval will read it (its `include:`s and `!function`s too), and says
    what it is: a task, a group or a Python task class."""
    import yaml
    from lm_eval.tasks._yaml_loader import load_yaml

    where = name if name == path else f"{name} ({path})"
    try:
        config = load_yaml(path, resolve_func=True)
    except yaml.YAMLError as err:
        raise UsageError(f"argument --tasks: {where} is not valid YAML: {' '.join(str(err).split())}.") from None
    except (OSError, ValueError, ImportError, AttributeError) as err:
        raise UsageError(f"argument --tasks: {where} cannot be read as a task: {' '.join(str(err).split())}.") from None
    if not any(key in config for key in ("task", "group", "class")):
        raise UsageError(
            f"argument --tasks: {where} is not a task file: it has no 'task', 'group' or 'class' key "
            f"(its keys: {', '.join(map(str, config)) or 'none'})."
        )


def check_task_folder(folder: str) -> None:
    """lm-eval runs every YAML of a folder named alone in `--tasks` (unless a task has that name)."""
    files = sorted(glob.glob(str(Path(folder) / "*.yaml")))
    if not files:
        if "/" not in folder and os.sep not in folder:  # a bare name may be a task's: lm-eval's index decides
            from lm_eval.tasks import TaskManager

            if TaskManager().match_tasks([folder]):
                return
        raise UsageError(f"argument --tasks: the folder {folder} holds no task YAML files (*.yaml).")
    for path in files:
        check_task_file(path, path)


def _positive_number(text: str) -> bool:
    try:
        number = float(text)
    except ValueError:
        return False
    return math.isfinite(number) and number > 0


def _number(value: float) -> str:
    return f"{value:g}"


def _shown(value: Any) -> str:
    """A value as typed, as far as lm-eval's reading keeps it (it reads `-1` as the float -1.0)."""
    from lm_eval_longmem.common.typed_values import show_value

    return _number(value) if isinstance(value, float) else show_value(value)

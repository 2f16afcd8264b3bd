"""Task metadata the embedded default model implies, filled in before lm-eval builds tasks.

lm-eval merges `--model_args` into every task's metadata, and its synthetic tasks (RULER's
`niah_*`, `ruler_vt`, ...) size their prompts with the tokenizer named there by `tokenizer=` or
`pretrained=`. `--model longmem` without `pretrained=` evaluates the embedded default model, so
such a task would stop with "No tokenizer or pretrained provided"; we name the default model's
own tokenizer for it instead. An explicit `tokenizer=` (in either place) is never replaced.

The folder is named, not converted, here: lm-eval loads the model (which converts it on first
use) before it builds any task, and a run that stops earlier (a misspelled task, a bad option)
must not first spend the conversion's time and print its progress bars.
"""

from __future__ import annotations

from lm_eval_longmem.harness.run_arguments import MODEL_NAME, arguments_dict


def fill_default_tokenizer(args) -> bool:
    """Add `tokenizer=<embedded model dir>` to `args.metadata` where nothing names a tokenizer."""
    if getattr(args, "model", None) != MODEL_NAME:
        return False
    model_args = arguments_dict(getattr(args, "model_args", None))
    metadata = getattr(args, "metadata", None)
    if metadata is not None and not isinstance(metadata, dict):
        return False  # a form we do not parse here: left exactly as the user wrote it
    if "pretrained" in model_args or "tokenizer" in model_args or "tokenizer" in (metadata or {}):
        return False
    from lm_eval_longmem.models.checkpoint.default_model import default_model_target

    args.metadata = {**(metadata or {}), "tokenizer": str(default_model_target())}
    return True

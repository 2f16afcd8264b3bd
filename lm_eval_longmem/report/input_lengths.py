"""How long each logged sample's input was, in the tokens of the run's own tokenizer.

The samples file keeps the text, not the token ids, so lengths are counted again: with
`--tokenizer` when given, else the tokenizer the run named (`tokenizer=` or `pretrained=` in
its `--model_args`), else, for a `--model longmem` run of the embedded default model, that
model's tokenizer (converted locally, so this works offline). Special tokens are not counted:
the length is the prompt's own. A sample's length is its longest request: context plus
continuation for loglikelihood, the prompt for generation.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from lm_eval_longmem.errors import UsageError
from lm_eval_longmem.report.logged_samples import LoggedRun, LoggedSample
from lm_eval_longmem.report.runs import model_args_dict

DEFAULT_TOKENIZER = "default"  # --tokenizer default: the embedded default model's


class UnknownTokenizerError(UsageError):
    """The tokenizer named (or recorded) cannot be loaded here."""


def tokenizer_source(run: LoggedRun, override: str | None = None) -> str:
    """What to load the run's tokenizer from: a folder or a Hub id (`default`: the embedded model)."""
    if override:
        return override
    config = run.data.get("config") or {}
    model_args = model_args_dict(config.get("model_args"))
    named = model_args.get("tokenizer") or model_args.get("pretrained")
    if isinstance(named, str) and named:
        return named
    if config.get("model") == "longmem":
        return DEFAULT_TOKENIZER
    raise UnknownTokenizerError(
        f"{run.results_file} names no tokenizer (no tokenizer= or pretrained= in its model_args): "
        "pass --tokenizer NAME_OR_FOLDER."
    )


@lru_cache(maxsize=8)
def load_tokenizer(source: str):
    from transformers import AutoTokenizer

    from lm_eval_longmem.common.hub import offline_context

    location = source
    if source.startswith(("/", ".", "~")) and not Path(source).expanduser().exists():
        raise UnknownTokenizerError(
            f"cannot load the tokenizer {source!r}: no such folder. Pass --tokenizer with a local folder, a Hub id "
            f"in the local cache, or '{DEFAULT_TOKENIZER}' (the embedded default model's)."
        )
    if source == DEFAULT_TOKENIZER:
        from lm_eval_longmem.models.checkpoint.default_model import default_model_dir

        location = str(default_model_dir())
    try:
        with offline_context():
            tokenizer = AutoTokenizer.from_pretrained(str(Path(location).expanduser()))
    except Exception as err:  # noqa: BLE001 - any failure to load is the same mistake for the user
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UnknownTokenizerError(
            f"cannot load the tokenizer {source!r} ({reason[:160]}): pass --tokenizer with a local folder, "
            f"a Hub id in the local cache, or '{DEFAULT_TOKENIZER}' (the embedded default model's)."
        ) from None
    tokenizer.model_max_length = 2**62  # lengths are only counted here: no "longer than the model" warning
    return tokenizer


class LengthCounter:
    """Token counts of texts, each distinct text counted once (the choices of a multiple-choice
    document share their long context)."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self._counts: dict[str, int] = {}

    def count(self, text: str) -> int:
        if not text:
            return 0
        if text not in self._counts:
            self._counts[text] = len(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return self._counts[text]

    def sample_length(self, sample: LoggedSample) -> int:
        return max((self.count(r.context) + self.count(r.continuation) for r in sample.requests), default=0)

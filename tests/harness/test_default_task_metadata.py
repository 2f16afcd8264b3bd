"""`--model longmem` with no `pretrained=` names the embedded model's tokenizer for tasks that
need one (RULER sizes its prompts with it), without overriding a tokenizer the user gave."""

import argparse
from pathlib import Path

from lm_eval_longmem.harness.default_task_metadata import fill_default_tokenizer
from lm_eval_longmem.models.checkpoint.default_model import default_model_dir


def _args(**values):
    base = {"model": "longmem", "model_args": {}, "metadata": None}
    return argparse.Namespace(**{**base, **values})


def test_embedded_default_names_its_tokenizer_for_ruler():
    from lm_eval.tasks.ruler.common_utils import get_tokenizer

    args = _args(metadata={"max_seq_lengths": [1024]})
    assert fill_default_tokenizer(args)
    assert args.metadata == {"max_seq_lengths": [1024], "tokenizer": str(default_model_dir())}
    # RULER's loaders call this with the (merged) metadata's tokenizer= and pretrained=
    tokenizer = get_tokenizer(tokenizer=args.metadata["tokenizer"], pretrained=None)
    assert tokenizer("The grass is green.")["input_ids"]


def test_a_named_model_or_tokenizer_is_left_alone():
    for args in [
        _args(model_args={"pretrained": "/some/model"}),
        _args(model_args="pretrained=/some/model,method=yarn"),
        _args(model_args={"tokenizer": "gpt2"}),
        _args(metadata={"tokenizer": "gpt2"}),
        _args(model="hf"),
    ]:
        before = dict(vars(args))
        assert not fill_default_tokenizer(args)
        assert vars(args) == before


def test_naming_the_tokenizer_converts_nothing(tmp_path, monkeypatch):
    """A run that stops at a later check (a misspelled task) must not convert the model first."""
    from lm_eval_longmem.common.paths import CACHE_ENV

    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    args = _args()
    assert fill_default_tokenizer(args)
    named = Path(args.metadata["tokenizer"])
    assert named.parent.parent == tmp_path and not named.exists()

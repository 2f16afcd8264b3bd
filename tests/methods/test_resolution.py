"""`--model_args` become a method in one place (models/method_registry/resolution.py): `method=`, else the
method the checkpoint records, else `vanilla`; explicit method arguments over recorded ones."""

import json

import pytest

from lm_eval_longmem.models.method_registry import MethodArgumentError, UnknownMethodError
from lm_eval_longmem.models.method_registry.resolution import check_method_arguments, resolve_method


@pytest.fixture
def yarn_checkpoint(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps(
            {"model_type": "llama", "longmem_method": "yarn", "longmem_method_args": {"factor": 4, "beta_fast": 16}}
        )
    )
    return str(tmp_path)


def test_an_explicit_method_with_its_own_and_other_arguments():
    resolved = resolve_method({"pretrained": "x/y", "method": "yarn", "factor": "8", "dtype": "float32"})
    assert (resolved.name, resolved.raw_args, resolved.other_args) == ("yarn", {"factor": "8"}, {"dtype": "float32"})
    assert resolved.args.factor == 8.0 and not resolved.from_checkpoint
    built = resolved.build()
    assert built.name == "yarn" and built.args == resolved.args


def test_no_method_and_no_checkpoint_is_vanilla():
    resolved = resolve_method({"dtype": "float32"})
    assert resolved.name == "vanilla" and resolved.other_args == {"dtype": "float32"} and not resolved.from_checkpoint


def test_the_checkpoints_record_is_used_under_the_explicit_arguments(yarn_checkpoint):
    resolved = resolve_method({"pretrained": yarn_checkpoint, "factor": 2})
    assert resolved.name == "yarn" and resolved.from_checkpoint
    assert resolved.raw_args == {"factor": 2, "beta_fast": 16}
    assert resolve_method({"pretrained": yarn_checkpoint, "method": "vanilla"}).name == "vanilla"  # method= wins


def test_bad_methods_and_arguments_raise_the_methods_own_errors():
    with pytest.raises(UnknownMethodError, match="method= is empty"):
        resolve_method({"method": " "})
    with pytest.raises(UnknownMethodError, match="Valid methods"):
        resolve_method({"method": 0})  # method=0 is no method, not vanilla
    with pytest.raises(MethodArgumentError, match="factor"):
        resolve_method({"method": "yarn", "factor": "x"})


def test_the_preflight_check_raises_our_errors_only(tmp_path):
    with pytest.raises(UnknownMethodError):
        check_method_arguments({"method": "yarnn"})
    check_method_arguments({"method": "yarn", "factor": 4, "dtype": "float32"})
    (tmp_path / "config.json").write_text("{")
    check_method_arguments({"pretrained": str(tmp_path)})  # a broken config: left for the model load to report

"""Every method on a model object passed as `pretrained=` (the Python API:
`simple_evaluate(model="longmem", model_args={"pretrained": model, ...})`) scores as on the same
checkpoint loaded by path, and the results name the object by where it came from.

lm-eval's HFLM takes an already-loaded model without building it, so a method's config edit
(the RoPE methods') has to reach it another way (method_framework/loaded_model.py); before it
did, pi/ntk/yarn on an object scored exactly as vanilla while the results claimed the method.
Each method runs with its acting settings of the method matrix (TINY_ARGUMENTS), which make it act on the
matrix's input, so a method that silently did nothing to the object would score differently.
"""

from __future__ import annotations

import pytest
from transformers import AutoModelForCausalLM

from lm_eval_longmem.lm_eval_model.longmem import LongMemLM
from lm_eval_longmem.models.method_framework.loaded_model import LoadedModelError
from lm_eval_longmem.models.method_registry import available_methods
from tests.helpers.method_checkpoints import checkpoint_of
from tests.methods.test_method_matrix import MARKS, TINY_ARGUMENTS, score

SAME = 1e-6  # one computation, the same weights: equal up to float32 rounding (measured: equal)


def build(pretrained, name: str, **extra) -> LongMemLM:
    """As `simple_evaluate` builds the model from a `model_args` dict."""
    args = {"pretrained": pretrained, "method": name, **TINY_ARGUMENTS[name], **extra}
    return LongMemLM.create_from_arg_obj(args, {"device": "cpu", "batch_size": 1})


def loaded(checkpoint):
    return AutoModelForCausalLM.from_pretrained(str(checkpoint))


@pytest.mark.parametrize("name", [pytest.param(n, marks=MARKS.get(n, ())) for n in available_methods()])
def test_an_object_scores_as_its_path(name, request):
    checkpoint = checkpoint_of(name, request)
    by_path, by_object = build(str(checkpoint), name), build(loaded(checkpoint), name)
    assert score(by_object)[0] == pytest.approx(score(by_path)[0], abs=SAME)
    path_info, object_info = by_path.get_model_info(), by_object.get_model_info()
    for key in ("longmem_method", "longmem_method_args", "longmem_context_length", "longmem_pretrained"):
        assert object_info[key] == path_info[key], key


def test_the_results_name_an_object_by_where_it_came_from(tiny_model_dir):
    info = build(loaded(tiny_model_dir), "pi").get_model_info()
    assert info["longmem_pretrained"] == str(tiny_model_dir)
    assert "\n" not in info["longmem_pretrained"]


def test_an_object_built_in_memory_is_named_by_its_class(tiny_model_dir):
    model = loaded(tiny_model_dir)
    model.name_or_path = ""
    model.config._name_or_path = ""
    info = build(model, "vanilla", tokenizer=str(tiny_model_dir)).get_model_info()
    assert info["longmem_pretrained"] == "LlamaForCausalLM"


def test_a_changed_object_refuses_another_method(tiny_model_dir):
    model = loaded(tiny_model_dir)
    build(model, "pi")
    build(model, "pi")  # the same method and arguments again: what the object already runs
    for name, extra in (("vanilla", {}), ("pi", {"factor": 3})):
        with pytest.raises(LoadedModelError, match="already changed in place by method=pi") as refused:
            build(model, name, **extra)
        assert "\n" not in str(refused.value)


def test_config_fields_in_model_args_are_refused_for_an_object(tiny_model_dir):
    with pytest.raises(LoadedModelError, match="rms_norm_eps set config fields before the weights are loaded"):
        build(loaded(tiny_model_dir), "vanilla", rms_norm_eps=1e-3)


@pytest.mark.parametrize(
    "name, given, recorded",
    [
        ("pi", {}, {"factor": 4.0, "original_length": 128}),
        ("yarn", {"target_length": 256}, {"factor": 2.0, "target_length": 256, "original_length": 128}),
        ("dynamic_ntk", {}, {"factor": 4.0, "original_length": 128, "training_length": 128}),
        ("self_extend", {"window": 16}, {"original_length": 128}),
        ("lm_infinite", {}, {"factor": 4.0, "local_window": 128}),
    ],
)
def test_the_results_record_resolved_arguments(name, given, recorded, tiny_model_dir):
    """`longmem_method_args` says what ran (factor 4.0, the checkpoint's C), never None for it."""
    lm = LongMemLM.create_from_arg_obj({"pretrained": str(tiny_model_dir), "method": name, **given}, {"device": "cpu"})
    args = lm.get_model_info()["longmem_method_args"]
    assert {key: args[key] for key in recorded} == recorded

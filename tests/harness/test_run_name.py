"""Results folders of `--model longmem` runs are named after model and method (run_name.py), by
one rule shared by the lm-eval hook and the sweep; other models keep lm-eval's names."""

import json
import re

import pytest

from lm_eval_longmem.harness.registration import install_run_names
from lm_eval_longmem.harness.run_name import run_folder_name
from lm_eval_longmem.models.method_framework.arguments import MethodArgumentError
from lm_eval_longmem.models.method_registry import UnknownMethodError

SAFE = re.compile(r"^[A-Za-z0-9._+-]+$")


@pytest.mark.parametrize(
    "model_args, expected",
    [
        (None, "SmolLM2-135M-Instruct__vanilla"),
        ("method=statedclm", "SmolLM2-135M-Instruct__statedclm"),
        ("method=statedclm,sink_length=32,chunk_size=512", "SmolLM2-135M-Instruct__statedclm"),  # defaults: no suffix
        ("method=yarn,factor=8", "SmolLM2-135M-Instruct__yarn__factor-8"),
        (
            {"method": "yarn", "factor": 8.0, "dtype": "float32"},
            "SmolLM2-135M-Instruct__yarn__factor-8",
        ),  # not a method arg
        (
            "pretrained=HuggingFaceTB/SmolLM2-135M,method=yarn,factor=4,beta_fast=16",
            "HuggingFaceTB__SmolLM2-135M__yarn__beta_fast-16",  # factor 4: the resolved default
        ),
        (
            "pretrained=/runs/yarn-8k/export,method=infini,update=delta,beta_init=-2",
            "yarn-8k__export__infini__beta_init--2_update-delta",
        ),
        ("pretrained=/models/Llama-3-8B,peft=/adapters/mine,method=vanilla", "Llama-3-8B+mine__vanilla"),
    ],
)
def test_folder_names(model_args, expected):
    assert run_folder_name(model_args) == expected


def test_different_arguments_never_share_a_folder_and_names_stay_short_and_safe():
    names = {run_folder_name(f"method=yarn,factor={f}") for f in (2, 4, 8, 16)}
    assert len(names) == 4
    long = run_folder_name(
        "method=longcache,max_context_length=100000,chunk_size=1000,sink_length=64,top_k=16,top_k_prime=1024,span_size=8"
    )
    assert len(long) <= 120 and SAFE.match(long) and re.search(r"-[0-9a-f]{8}$", long)
    other = run_folder_name(
        "method=longcache,max_context_length=100000,chunk_size=1000,sink_length=64,top_k=16,top_k_prime=1024,span_size=9"
    )
    assert other != long  # cut names keep a hash of the exact values


def test_the_method_a_checkpoint_records_names_its_folder(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps({"model_type": "llama", "longmem_method": "yarn", "longmem_method_args": {"factor": 8}})
    )
    assert run_folder_name(f"pretrained={tmp_path}") == f"{tmp_path.name}__yarn__factor-8"


def test_bad_methods_raise_the_wrappers_own_errors():
    with pytest.raises(UnknownMethodError, match="Valid methods"):
        run_folder_name("method=yarm")
    with pytest.raises(MethodArgumentError, match="factor"):
        run_folder_name("method=yarn,factor=x")


def test_the_hook_renames_longmem_runs_only():
    from lm_eval.loggers.evaluation_tracker import EvaluationTracker

    install_run_names()
    install_run_names()  # idempotent
    tracker = EvaluationTracker(output_path="out").general_config_tracker
    tracker.log_experiment_args("longmem", "method=yarn,factor=8", None, None, False)
    assert tracker.model_name == tracker.model_name_sanitized == "SmolLM2-135M-Instruct__yarn__factor-8"
    tracker.log_experiment_args("longmem", {"method": "streamingllm", "max_context_length": 1024}, None, None, False)
    assert tracker.model_name_sanitized == "SmolLM2-135M-Instruct__streamingllm__max_context_length-1024"
    tracker.log_experiment_args("hf", "pretrained=HuggingFaceTB/SmolLM2-135M", None, None, False)
    assert tracker.model_name == "HuggingFaceTB/SmolLM2-135M"
    assert tracker.model_name_sanitized == "HuggingFaceTB__SmolLM2-135M"


@pytest.mark.parametrize("method", ["pi", "ntk", "yarn", "llama3", "dynamic_ntk", "lm_infinite"])
def test_an_argument_equal_to_its_resolved_default_is_left_out(method):
    """factor=None stands for 4.0 (unless target_length is given): `factor=4` is the same run."""
    assert run_folder_name(f"method={method},factor=4") == run_folder_name(f"method={method}")
    assert run_folder_name(f"method={method},factor=4.0") == f"SmolLM2-135M-Instruct__{method}"
    assert run_folder_name(f"method={method},factor=2").endswith("__factor-2")
    assert run_folder_name(f"method={method},target_length=1024").endswith("__target_length-1024")

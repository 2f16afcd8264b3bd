"""A new user's mistakes, each answered by one message (what was wrong, the form or choices
expected, the fix), a non-zero exit and no traceback; offline, before any model loads.

The real `lm_eval` / `lm-eval-longmem` commands are run for the checks made at start-up
(preflight.py): they stop before lm-eval imports torch or loads a model, so each costs a few
seconds. The many variants of a malformed value are checked in-process, through the same
functions the commands call."""

import argparse
import logging
import re
import time
from pathlib import Path

import pytest

from lm_eval_longmem.common.typed_values import MalformedValueError, coerce
from lm_eval_longmem.harness import preflight, quiet, run_options
from lm_eval_longmem.lm_eval_model.longmem import _parse_bool
from lm_eval_longmem.models.checkpoint.folder_contents import IncompleteCheckpointError
from lm_eval_longmem.tasks import registry
from lm_eval_longmem.tasks.dataset_needs import needed
from lm_eval_longmem.tasks.passkey.protocol import OPTION_PREFIX as PK
from lm_eval_longmem.tasks.passkey.protocol import Options as PasskeyOptions
from lm_eval_longmem.tasks.task_options import TaskOptionError, parse_task_options
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message, started_nothing_heavy

TASKS_DIR = Path(registry.__file__).resolve().parent


@pytest.fixture
def empty_hub_cache(tmp_path):
    """A Hugging Face home with nothing cached, so "missing offline" does not depend on the machine."""
    return {"HF_HOME": str(tmp_path / "hf_home")}


def test_uncached_hub_model_fails_at_start_up(empty_hub_cache):
    start = time.monotonic()
    proc = run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            "pretrained=someorg/somemodel",
            "--device",
            "cpu",
            "--tasks",
            "forgetting_curve",
        ],
        env_extra=empty_hub_cache,
        check=False,
    )
    elapsed = time.monotonic() - start
    assert_one_message(
        proc, "'someorg/somemodel' is not in the local Hugging Face cache", "pretrained=<local directory>"
    )
    assert started_nothing_heavy(proc)
    assert proc.returncode == 1  # the command is right; this machine lacks the model
    assert elapsed < 60, elapsed  # ~3 s on 2 cores (under 5 s even loaded); generous for CI


def test_missing_local_model_path_fails_at_start_up(tmp_path):
    missing = tmp_path / "no_such_run" / "export"
    proc = run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={missing}",
            "--device",
            "cpu",
            "--tasks",
            "forgetting_curve",
        ],
        check=False,
    )
    assert_one_message(proc, f"No such file or directory: '{missing}'", "<output_dir>/export")
    assert started_nothing_heavy(proc)
    assert proc.returncode == 2  # a path typed wrong: a mistake in the command


def test_group_lists_every_missing_dataset_and_the_one_fetch_command(empty_hub_cache):
    proc = run(
        [str(BIN / "lm_eval"), "--model", "longmem", "--device", "cpu", "--tasks", "longmem"],
        env_extra=empty_hub_cache,
        check=False,
    )
    assert_one_message(
        proc,
        "3 dataset(s)",
        "CogComp/trec",
        "for longmem_trec_manyshot",
        "L4NLP/LEval",
        "for longmem_topicret",
        "abertsch/booksum-fullbooks",
        "for longmem_booksum",
        "lm-eval-longmem fetch-data trec leval-topicret booksum",
        "--metadata bs_data=PATH",
    )
    assert started_nothing_heavy(proc)
    assert proc.returncode == 1  # data missing offline


def test_malformed_list_is_refused_not_repaired():
    proc = run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--device",
            "cpu",
            "--tasks",
            "longmem_passkey",
            "--metadata",
            "pk_lengths=[1024,",
        ],
        check=False,
    )
    assert_one_message(proc, "--metadata pk_lengths=[1024, is malformed", "never closed", "[512,1024]")
    assert started_nothing_heavy(proc)


def test_fetch_data_offline_says_it_needs_network(empty_hub_cache):
    proc = run([str(BIN / "lm-eval-longmem"), "fetch-data"], env_extra=empty_hub_cache, check=False)
    assert_one_message(proc, "lm-eval-longmem: error: fetch-data needs network", "HF_HUB_OFFLINE")
    listing = run([str(BIN / "lm-eval-longmem"), "fetch-data", "--list"], env_extra=empty_hub_cache).stdout
    assert re.search(r"trec\s+missing", listing) and re.search(r"leval-topicret\s+missing", listing)


@pytest.mark.parametrize(
    "raw, reason",
    [
        ("[1024,", "'[' is never closed"),
        ("(512,1024", "'(' is never closed"),
        ("1024]", "unbalanced or nested brackets"),
        ("[[512],1024]", "unbalanced or nested brackets"),
        ("512,,1024", "an empty item"),
        ("[512,1024,]", "an empty item"),
        ("", "an empty value"),
        ("[512,1k]", "item '1k' is not an integer"),
        ([512, "x"], "item 'x' is not an integer"),
        ([512, 1.5], "item 1.5 is not an integer"),
        ({512: 1}, "a set or mapping is not a list"),
    ],
)
def test_malformed_lists_name_option_value_and_form(raw, reason):
    with pytest.raises(TaskOptionError) as caught:
        parse_task_options(PasskeyOptions, {"pk_lengths": raw}, PK)
    message = str(caught.value)
    assert message.startswith("--metadata pk_lengths=") and "is malformed" in message
    assert reason in message and "expected a list of integers such as [512,1024]" in message


@pytest.mark.parametrize(
    "raw", ["[512, 1024]", "512 1024", "512,1024", [1024, 512], (512, 1024), "(512,1024)", [512.0, 1024]]
)
def test_well_formed_lists_are_read(raw):
    assert parse_task_options(PasskeyOptions, {"pk_lengths": raw}, PK).lengths == (512, 1024)


@pytest.mark.parametrize(
    "annotation, raw, expected",
    [
        (int, "10x", "expected an integer"),
        (int, 2.5, "expected an integer"),
        (int, True, "expected an integer"),
        (int, [1, 2], "expected an integer"),
        (float, "abc", "expected a number"),
        (float, "nan", "expected a number"),
        (float, float("inf"), "expected a finite number"),
        (bool, "maybe", "expected true or false"),
        (bool, 2, "expected true or false"),
        (str, [1, 2], "expected a single value"),
        (int | None, "x", "expected an integer such as 1024, or none"),
    ],
)
def test_malformed_scalars_say_the_form_expected(annotation, raw, expected):
    with pytest.raises(MalformedValueError, match=re.escape(expected)):
        coerce(raw, annotation)


def test_exact_values_are_read_unchanged():
    assert coerce("1e3", int) == 1000 and coerce(" 12 ", int) == 12 and coerce(1e3, int) == 1000
    assert coerce("0.5", float) == 0.5 and coerce(3, float) == 3.0
    assert coerce("Yes", bool) is True and coerce(0, bool) is False
    assert coerce("none", int | None) is None


def test_method_boolean_of_the_wrapper_is_one_message():
    with pytest.raises(
        MalformedValueError, match=r"--model_args reuse_prefix='maybe' is malformed: expected true or false"
    ):
        _parse_bool("reuse_prefix", "maybe")


def _args(**values):
    base = {"model": "longmem", "model_args": {}, "tasks": None, "metadata": None}
    return argparse.Namespace(**{**base, **values})


def test_start_up_check_reads_task_options_of_the_group_members():
    for metadata, expected in [
        ({"fc_samples": "3x"}, "--metadata fc_samples=3x is malformed"),
        ({"trec_shots": "[1,,10]"}, "--metadata trec_shots=[1,,10] is malformed"),
        ({"topicret_bogus": 1}, "Unknown option(s) topicret_bogus"),
    ]:
        with pytest.raises(TaskOptionError, match=re.escape(expected)):
            preflight.check(_args(tasks=["longmem"], metadata=metadata))


def test_start_up_check_refuses_an_unknown_method_or_a_bad_method_argument():
    from lm_eval_longmem.models.method_registry import MethodArgumentError, UnknownMethodError

    with pytest.raises(UnknownMethodError, match=r"Unknown method='yarnn'\. Did you mean method=yarn\?"):
        preflight.check(_args(model_args={"method": "yarnn"}))
    with pytest.raises(MethodArgumentError, match=r"factor='\[2' is not a valid float"):
        preflight.check(_args(model_args={"method": "yarn", "factor": "[2"}))
    preflight.check(_args(model_args={"method": "yarn", "factor": 4, "dtype": "float32"}))  # a valid one passes


def test_start_up_check_passes_what_it_cannot_judge(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # Not ours: another model, unknown tasks, a local path as pretrained.
    preflight.check(_args(model="hf", model_args={"pretrained": "someorg/somemodel"}, tasks=["hellaswag"]))
    preflight.check(_args(model_args={"pretrained": str(TASKS_DIR), "gguf_file": "x.gguf"}, tasks=["not_ours"]))
    # a local folder that is no checkpoint at all is named, whatever the task
    with pytest.raises(IncompleteCheckpointError, match="has no config.json"):
        preflight.check(_args(model_args={"pretrained": str(TASKS_DIR)}, tasks=["not_a_task_of_ours"]))


def test_datasets_needed_follow_the_options():
    group = {"longmem_trec_manyshot": ["trec"], "longmem_topicret": ["leval-topicret"], "longmem_booksum": ["booksum"]}
    assert {t: [k for k, users in needed(["longmem"]).items() if t in users] for t in group} == group
    assert needed(["longmem"], {"trec_data_dir": "/d", "topicret_data": "/t", "bs_data": "/b"}) == {}
    assert needed(["longmem_trec_manyshot"], {"trec_source": "manyshots"}) == {
        "trec-manyshots": ["longmem_trec_manyshot"]
    }
    assert needed(["forgetting_curve"]) == {}  # auto falls back to the offline corpus
    assert needed(["forgetting_curve"], {"fc_corpus": "pg19"}) == {"pg19": ["forgetting_curve"]}
    assert set(registry.group_members()) >= {
        "forgetting_curve",
        "longmem_passkey",
        "longmem_trec_manyshot",
        "longmem_topicret",
    }


def test_every_class_task_yaml_states_its_output_type():
    """`lm_eval ls tasks` reads the output type from the YAML, not from the class."""
    import importlib

    for path in sorted(TASKS_DIR.glob("*/*.yaml")):
        text = path.read_text()
        target = re.search(r"^class: !function ([\w.]+)\.(\w+)$", text, re.MULTILINE)
        if target is None:
            continue
        declared = re.search(r"^output_type: (\w+)$", text, re.MULTILINE)
        assert declared, f"{path.name} has no output_type"
        cls = getattr(importlib.import_module(target.group(1)), target.group(2))
        assert declared.group(1) == cls.OUTPUT_TYPE, path.name


def test_known_harmless_lm_eval_warning_is_dropped_for_our_tasks_only(caplog, monkeypatch):
    monkeypatch.delenv("LM_EVAL_LONGMEM_DEBUG", raising=False)
    quiet.install()
    logger = logging.getLogger("lm_eval.evaluator_utils")
    with caplog.at_level(logging.WARNING, logger="lm_eval.evaluator_utils"):
        logger.warning("[forgetting_curve] Metrics were not scored on the same number of documents (a=1, b=2).")
        logger.warning("[hellaswag] Metrics were not scored on the same number of documents (a=1, b=2).")
        logger.warning("[forgetting_curve] something else went wrong")
    messages = [r.getMessage() for r in caplog.records]
    assert not any(m.startswith("[forgetting_curve] Metrics") for m in messages)
    assert any(m.startswith("[hellaswag] Metrics") for m in messages)
    assert "[forgetting_curve] something else went wrong" in messages


def test_the_harmless_warning_is_dropped_for_our_task_under_an_included_name(caplog, monkeypatch):
    """A YAML that `include:`s one of ours under a new name (--include_path) builds a task of our
    class: its warning is dropped too, by the class it was built from, not by the name."""
    from lm_eval_longmem.tasks import python_task

    monkeypatch.delenv("LM_EVAL_LONGMEM_DEBUG", raising=False)
    monkeypatch.setattr(python_task, "constructed_task_names", {"my_passkey_variant"})
    quiet.install()
    logger = logging.getLogger("lm_eval.evaluator_utils")
    with caplog.at_level(logging.WARNING, logger="lm_eval.evaluator_utils"):
        logger.warning("[my_passkey_variant] Metrics were not scored on the same number of documents (a=1, b=2).")
        logger.warning("[my_hellaswag_variant] Metrics were not scored on the same number of documents (a=1, b=2).")
    messages = [r.getMessage() for r in caplog.records]
    assert not any(m.startswith("[my_passkey_variant]") for m in messages)
    assert any(m.startswith("[my_hellaswag_variant]") for m in messages)


def test_a_model_argument_nobody_takes_is_refused_at_start_up(tiny_model_dir):
    """`facter=2` was found only once the model loaded, after lm-eval's task index; now the local
    checkpoint's config is read at start-up and the message is the model's own."""
    from lm_eval_longmem.models.method_registry.model_arguments import UnknownModelArgumentError

    with pytest.raises(UnknownModelArgumentError, match=r"(?s)Unknown --model_args facter .*method=yarn"):
        preflight.check(_args(model_args={"pretrained": str(tiny_model_dir), "method": "yarn", "facter": 2}))
    # a config attribute, a from_pretrained option, an HFLM parameter and the wrapper's own pass
    preflight.check(
        _args(
            model_args={
                "pretrained": str(tiny_model_dir),
                "method": "yarn",
                "factor": 2,
                "rms_norm_eps": 1e-5,
                "attn_implementation": "sdpa",
                "dtype": "float32",
                "reuse_prefix": False,
            }
        )
    )


def test_num_fewshot_on_only_our_tasks_is_a_wrong_command_line():
    """Our tasks fix num_fewshot 0; lm-eval would ignore the option with an INFO line."""
    from lm_eval_longmem.errors import UsageError

    with pytest.raises(UsageError) as caught:
        run_options.check_num_fewshot_applies(2, ["longmem_passkey", "longmem_trec_manyshot"])
    message = str(caught.value)
    assert message.startswith("argument --num_fewshot: 2 does not apply to longmem_passkey, longmem_trec_manyshot")
    assert "trec_shots" in message and "\n" not in message
    with pytest.raises(UsageError, match="longmem_booksum"):
        run_options.check_num_fewshot_applies(5, ["longmem"])  # the group's members


def test_num_fewshot_beside_other_tasks_applies_to_those_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        run_options.check_num_fewshot_applies(3, ["forgetting_curve", "hellaswag"])
    assert [r.getMessage() for r in caplog.records] == [
        "--num_fewshot 3 does not apply to forgetting_curve: these tasks build their prompts whole and take no "
        "few-shot examples; it applies to hellaswag only."
    ]
    caplog.clear()
    for num_fewshot, tasks in ((0, ["forgetting_curve"]), (None, ["forgetting_curve"]), (3, ["hellaswag"])):
        run_options.check_num_fewshot_applies(num_fewshot, tasks)
    assert not caplog.records

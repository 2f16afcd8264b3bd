"""Every task option's range and choices (corpus names included) are checked at start-up, before
any model loads, with one message naming the option, the value and what is allowed: through the
start-up check in-process for each option, and through the real `lm_eval` for two of them."""

import argparse
import time
from pathlib import Path

import pytest

from lm_eval_longmem.harness import preflight
from lm_eval_longmem.tasks.task_options import TaskOptionError
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message, started_nothing_heavy

# A folder that exists (a local-data option must name one) but holds no data: options only, the
# data is never read at start-up.
SOME_FOLDER = str(Path(__file__).parent)
OFFLINE_TREC = {"trec_data_dir": SOME_FOLDER}


def check(tasks, **metadata):
    preflight.check(argparse.Namespace(model="longmem", model_args={}, tasks=tasks, metadata=metadata))


@pytest.mark.parametrize(
    "task, metadata, expected",
    [
        ("forgetting_curve", {"fc_points": 0}, "fc_points=0 is out of range: expected an integer between 1 and 100000"),
        ("forgetting_curve", {"fc_samples": 0}, "fc_samples=0 is out of range"),
        # an upper bound a machine can run: this once failed in a 7 TiB allocation after the model loaded
        (
            "forgetting_curve",
            {"fc_points": 10**12},
            "fc_points=1000000000000 is out of range: expected an integer between",
        ),
        ("forgetting_curve", {"fc_min_length": 0}, "fc_min_length=0 is out of range"),
        ("forgetting_curve", {"fc_max_length": 0}, "fc_max_length=0 is out of range"),
        ("forgetting_curve", {"fc_lengths": "[0,8]"}, "fc_lengths=[0,8] is out of range: expected a non-empty list"),
        (
            "forgetting_curve",
            {"fc_seed": -1},
            "fc_seed=-1 is out of range: expected an integer between 0 and 4294967295",
        ),
        (
            "forgetting_curve",
            {"fc_granularity": "lin"},
            "fc_granularity=lin is not one of linear, log. Did you mean linear?",
        ),
        (
            "forgetting_curve",
            {"fc_corpus": "shakespear"},
            "Unknown corpus 'shakespear' (--metadata fc_corpus). Did you mean shakespeare?",
        ),
        (
            "longmem_passkey",
            {"pk_depths": "[0,150]"},
            "pk_depths=[0,150] is out of range: expected a non-empty list of integers, each between 0 and 100",
        ),
        ("longmem_passkey", {"pk_lengths": "[]"}, "pk_lengths=[] is out of range"),
        ("longmem_passkey", {"pk_samples": 0}, "pk_samples=0 is out of range"),
        ("longmem_passkey", {"pk_seed": -3}, "pk_seed=-3 is out of range"),
        (
            "longmem_passkey",
            {"pk_protocol": "token"},
            "pk_protocol=token is not one of tokens, chars. Did you mean tokens?",
        ),
        (
            "longmem_trec_manyshot",
            {"trec_source": "manyshot"},
            "trec_source=manyshot is not one of cogcomp, manyshots, sample. Did you mean manyshots?",
        ),
        ("longmem_trec_manyshot", {"trec_shots": "[0,10]"}, "trec_shots=[0,10] is out of range"),
        ("longmem_trec_manyshot", {"trec_questions": 0}, "trec_questions=0 is out of range"),
        ("longmem_trec_manyshot", {"trec_seed": -1}, "trec_seed=-1 is out of range"),
        ("longmem_trec_manyshot", {"trec_source": "manyshots", "trec_shots": "[7]"}, "has files for"),
        (
            "longmem_topicret",
            {"topicret_overlong": "trunc"},
            "topicret_overlong=trunc is not one of skip, truncate. Did you mean truncate?",
        ),
        ("longmem_perplexity", {"ppl_windows": 0}, "ppl_windows=0 is out of range"),
        ("longmem_perplexity", {"ppl_points": 0}, "ppl_points=0 is out of range"),
        ("longmem_perplexity", {"ppl_bins": 0}, "ppl_bins=0 is out of range"),
        (
            "longmem_perplexity",
            {"ppl_lengths": "[1,64]"},
            "ppl_lengths=[1,64] is out of range: expected a non-empty list of integers, each between 2 and 16777216",
        ),
        (
            "longmem_perplexity",
            {"ppl_max_length": 1},
            "ppl_max_length=1 is out of range: expected an integer between 2 and 16777216",
        ),
        ("longmem_perplexity", {"ppl_seed": -1}, "ppl_seed=-1 is out of range"),
        (
            "longmem_perplexity",
            {"ppl_corpus": "pg91"},
            "Unknown corpus 'pg91' (--metadata ppl_corpus). Did you mean pg19?",
        ),
        ("longmem_perplexity", {"ppl_lengths": "[64]", "ppl_max_length": 128}, "not both"),
        ("longmem_booksum", {"bs_data": SOME_FOLDER, "bs_lengths": "[0,16]"}, "bs_lengths=[0,16] is out of range"),
        ("longmem_booksum", {"bs_data": SOME_FOLDER, "bs_split": "dev"}, "bs_split=dev is not one of train"),
    ],
)
def test_each_bad_option_is_one_message_at_start_up(task, metadata, expected):
    with pytest.raises(TaskOptionError) as caught:
        check([task], **OFFLINE_TREC, **metadata)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_group_members_are_checked_with_the_groups_options_under_the_command_lines():
    # the group sets ppl_max_length=1024: explicit lengths need it cleared, as the task would say after the load
    with pytest.raises(TaskOptionError, match="not both"):
        check(["longmem"], **OFFLINE_TREC, topicret_data=SOME_FOLDER, bs_data=SOME_FOLDER, ppl_lengths="[64]")
    check(
        ["longmem"],
        **OFFLINE_TREC,
        topicret_data=SOME_FOLDER,
        bs_data=SOME_FOLDER,
        ppl_lengths="[64]",
        ppl_max_length="none",
    )


def test_valid_options_pass(corpus_file):
    check(
        ["forgetting_curve", "longmem_passkey", "longmem_perplexity"],
        fc_corpus=str(corpus_file),
        fc_granularity="log",
        fc_seed=0,
        pk_depths="[0,100]",
        pk_protocol="chars",
        ppl_corpus="shakespeare",
        ppl_lengths="[2,64]",
    )
    check(
        ["longmem_topicret", "longmem_trec_manyshot"],
        **OFFLINE_TREC,
        topicret_data=SOME_FOLDER,
        topicret_overlong="truncate",
        trec_source="manyshots",
        trec_shots="[1,10]",
    )


@pytest.mark.parametrize(
    "task, option, expected",
    [
        ("longmem_passkey", "pk_depths=[0,150]", "each between 0 and 100"),
        ("forgetting_curve", "fc_corpus=shakespear", "Did you mean shakespeare?"),
    ],
)
def test_the_real_command_refuses_them_before_loading_the_model(task, option, expected):
    start = time.monotonic()
    proc = run(
        [str(BIN / "lm_eval"), "--model", "longmem", "--device", "cpu", "--tasks", task, "--metadata", option],
        check=False,
    )
    assert_one_message(proc, expected)
    assert started_nothing_heavy(proc)
    assert time.monotonic() - start < 60  # ~3 s on 2 cores; the model load alone took ~7 s

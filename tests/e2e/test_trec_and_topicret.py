"""The TREC and TopicRet tasks through the stock `lm_eval` command, and offline without data."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.cli_runs import BIN, results_of, run
from tests.helpers.data_fixtures import (
    PLAUSIBLE_TREC_QUESTIONS,
    topicret_rows,
    write_topicret_fixture,
    write_trec_fixture,
)
from tests.helpers.tiny_llama import build_tiny_model


@pytest.fixture(scope="module")
def wide_tiny_model(tmp_path_factory):
    """The tiny Llama with room for a few dozen demonstrations."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny_llama_1k"), max_position_embeddings=1024)


def test_missing_data_offline_fails_fast_and_names_the_fix(tmp_path):
    script = textwrap.dedent(
        """
        import time
        from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError
        from lm_eval_longmem.data.leval_topicret import load_topicret
        from lm_eval_longmem.data.trec import load_manyshot_rows, load_trec
        for load in (load_trec, load_topicret, lambda: load_manyshot_rows(10)):
            start = time.perf_counter()
            try:
                load()
            except DatasetUnavailableError as err:
                print(f"{time.perf_counter() - start:.2f}|{err}")
        """
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HOME": str(tmp_path / "empty_hf_home")}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120).stdout
    lines = out.strip().splitlines()
    assert len(lines) == 3, out
    for line, option in zip(lines, ("trec_data_dir", "topicret_data", "trec_data_dir")):
        seconds, message = line.split("|", 1)
        # no Hub retries: ~1 s on a quiet machine (the first load also imports `datasets`);
        # generous, so a busy CI machine cannot fail it
        assert float(seconds) < 20, line
        assert "cannot be reached" in message and "HF_DATASETS_OFFLINE" in message and option in message
    assert "CogComp/trec" in lines[0] and "refs/convert/parquet" in lines[0]
    assert "L4NLP/LEval" in lines[1] and "Leooyii/manyshots_trec" in lines[2]


def test_trec_manyshot_through_the_cli(wide_tiny_model, tmp_path):
    data = write_trec_fixture(tmp_path / "trec", PLAUSIBLE_TREC_QUESTIONS[:56], PLAUSIBLE_TREC_QUESTIONS[56:])
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={wide_tiny_model},method=vanilla",
            "--tasks",
            "longmem_trec_manyshot",
            "--metadata",
            f"trec_data_dir={data}",
            "trec_shots=[1,5,10]",
            "trec_questions=3",
            "--gen_kwargs",
            "max_gen_toks=3",
            "--limit",
            "4",
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    results = results_of(out)
    metrics = results["results"]["longmem_trec_manyshot"]
    # --limit 4 on interleaved documents still covers all three shot counts.
    assert {"acc,none", "acc@0001shots,none", "acc@0005shots,none", "acc@0010shots,none"} <= set(metrics)
    protocol = results["configs"]["longmem_trec_manyshot"]["metadata"]["protocol"]
    assert protocol["shots"] == [1, 5, 10] and protocol["context_length"] == 1024
    (samples_file,) = out.rglob("samples_longmem_trec_manyshot_*.jsonl")
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert [s["doc"]["shots"] for s in samples] == [1, 5, 10, 1]
    prompt = samples[0]["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith("Please determine the type of the question below.") and prompt.endswith("\nType:")
    assert prompt.count("\nType: ") == 1


def test_topicret_through_the_cli_with_model_hf(tiny_model_dir, tmp_path):
    rows = topicret_rows(3)
    rows["input"][2] = rows["input"][2] * 20  # far beyond the model's length: skipped and counted
    data = write_topicret_fixture(tmp_path / "topic_retrieval_longchat.parquet", rows)
    out = tmp_path / "out"
    proc = run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_model_dir},max_length=1024",
            "--device",
            "cpu",
            "--tasks",
            "longmem_topicret",
            "--metadata",
            f"topicret_data={data}",
            "--gen_kwargs",
            "max_gen_toks=3",
            "--output_path",
            str(out),
        ]
    )
    assert "skipped 1 of 3 records" in proc.stderr
    metrics = results_of(out)["results"]["longmem_topicret"]
    for name in ("first_topic_acc", "second_topic_acc", "third_topic_acc", "mean_acc"):
        assert 0.0 <= metrics[f"{name},none"] <= 1.0
    assert metrics["skipped_documents,none"] == 1 and metrics["truncated_documents,none"] == 0

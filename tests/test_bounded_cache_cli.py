"""The headline command, `lm_eval --model longmem --model_args method=statedclm --tasks
forgetting_curve`, through the stock CLI on the tiny model, with a budget small enough that
the cache really is compressed (inputs of up to 81 tokens, budget 24)."""

import sys
from pathlib import Path

import pytest

from test_cli_end_to_end import results_of, run, small_protocol

BIN = Path(sys.executable).parent


@pytest.mark.parametrize("method", ["statedclm", "streamingllm"])
def test_headline_command_with_a_compressing_budget(method, tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "out"
    budget = "max_context_length=24,chunk_size=8,sink_length=4"
    run(
        [str(BIN / "lm_eval"), "--model", "longmem", "--model_args", f"pretrained={tiny_model_dir},method={method},{budget}",
         "--tasks", "forgetting_curve", *small_protocol(corpus_file), "--output_path", str(out)]
    )
    results = results_of(out)
    curve = results["results"]["forgetting_curve"]["curve,none"]
    assert [p["length"] for p in curve["points"]] == [8, 24, 40]  # 2 * 40 + 1 = 81 tokens > budget 24
    assert all(0 <= p["copy_mean"] <= 1 and p["num_samples"] == 2 for p in curve["points"])
    config = results["config"]
    assert config["longmem_method"] == method and config["longmem_scoring"] == f"bounded_cache:{method}"
    assert config["longmem_method_args"]["max_context_length"] == 24
    assert config["longmem_context_length"] == 128  # the training length: tasks are sized as for vanilla

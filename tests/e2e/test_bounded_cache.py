"""The headline command, `lm_eval --model longmem --model_args method=statedclm --tasks
forgetting_curve`, through the stock CLI on the tiny model, with a budget small enough that
the cache really is compressed (inputs of up to 81 tokens, budget 24)."""

import pytest

from tests.helpers.cli_runs import BIN, results_of, run, small_protocol


@pytest.mark.parametrize("method", ["statedclm", "streamingllm"])
def test_headline_command_with_a_compressing_budget(method, tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "out"
    budget = "max_context_length=24,chunk_size=8,sink_length=4"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},method={method},{budget}",
            "--tasks",
            "forgetting_curve",
            *small_protocol(corpus_file),
            "--output_path",
            str(out),
        ]
    )
    results = results_of(out)
    curve = results["results"]["forgetting_curve"]["curve,none"]
    assert [p["length"] for p in curve["points"]] == [8, 24, 40]  # 2 * 40 + 1 = 81 tokens > budget 24
    assert all(0 <= p["copy_mean"] <= 1 and p["num_samples"] == 2 for p in curve["points"])
    config = results["config"]
    assert config["longmem_method"] == method and config["longmem_scoring"] == f"bounded_cache:{method}"
    assert config["longmem_method_args"]["max_context_length"] == 24
    assert config["longmem_context_length"] == 1 << 20  # bounded memory: inputs of any length are accepted
    assert config["longmem_bounded_memory"] is True


@pytest.mark.parametrize("method", ["statedclm", "longcache"])
def test_passkey_generation_through_the_bounded_cache(method, tiny_model_dir, tmp_path):
    """generate_until goes through the method's own generator: chunked prefill, bounded decode."""
    out = tmp_path / "out"
    budget = (
        "max_context_length=24,chunk_size=8,sink_length=4,top_k_prime=2,span_size=2"
        if method == "longcache"
        else ("max_context_length=24,chunk_size=8,sink_length=4")
    )
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},method={method},{budget}",
            "--tasks",
            "longmem_passkey",
            "--metadata",
            "pk_lengths=[64,96]",
            "pk_depths=[0,100]",
            "pk_samples=1",
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    results = results_of(out)
    grid = results["results"]["longmem_passkey"]["grid,none"]
    assert grid["num_samples"] == [[1, 1], [1, 1]]
    (samples_file,) = out.rglob("samples_longmem_passkey_*.jsonl")
    assert len(samples_file.read_text().splitlines()) == 4
    assert results["config"]["longmem_method"] == method

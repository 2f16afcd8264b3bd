"""Two methods sharing one `--use_cache`, through the real `lm_eval` command: after a vanilla run,
streamingllm with the same `--use_cache` must not be served vanilla's scores ("Cached requests: N,
Requests remaining: 0") nor save them as its own; it scores every request itself, and its rerun
resumes."""

import re

import pytest

from tests.helpers.cli_runs import BIN, results_of, run, small_protocol

STREAMING = "method=streamingllm,max_context_length=128,chunk_size=32"


def cache_counts(stderr: str) -> tuple[int, int]:
    """lm-eval's (cached, remaining) request counts for the run's loglikelihood requests."""
    (found,) = re.findall(r"Cached requests: (\d+), Requests remaining: (\d+)", stderr)
    return int(found[0]), int(found[1])


@pytest.mark.slow  # 27 s; fingerprints per method are tested in process by tests/lm_eval_model/test_request_cache.py
def test_vanilla_then_streamingllm_with_one_cache(tiny_model_dir, corpus_file, tmp_path):
    cache = tmp_path / "cache" / "run"

    def lm_eval(method_args: str, out: str):
        proc = run(
            [
                str(BIN / "lm_eval"),
                "--model",
                "longmem",
                "--model_args",
                f"pretrained={tiny_model_dir},{method_args}",
                "--tasks",
                "forgetting_curve",
                *small_protocol(corpus_file),
                "--use_cache",
                str(cache),
                "--output_path",
                str(tmp_path / out),
            ]
        )
        return cache_counts(proc.stderr), proc.stderr

    (cached, remaining), _ = lm_eval("method=vanilla", "vanilla")
    assert cached == 0 and remaining > 0
    (cached, remaining_streaming), stderr = lm_eval(STREAMING, "streaming")
    assert cached == 0 and remaining_streaming == remaining  # nothing of vanilla's is taken
    assert "this model and method's requests go to" in stderr
    assert "Using cache at" not in stderr  # lm-eval's line names run_rank0.db, which is never made
    config = results_of(tmp_path / "streaming")["config"]
    assert config["longmem_method"] == "streamingllm"
    # lm-eval's config.use_cache is the path as typed; ours names the database the run used
    assert config["use_cache"] == str(cache) and "__streamingllm__" in config["longmem_use_cache"]
    assert config["longmem_use_cache"].endswith("_rank0.db")
    (cached, remaining), _ = lm_eval(STREAMING, "streaming_again")
    assert (cached, remaining) == (remaining_streaming, 0)  # the same command resumes from its own
    databases = sorted(p.name for p in cache.parent.glob("*.db"))
    assert len(databases) == 2 and "run_rank0.db" not in databases
    assert [name.split("__")[2] for name in databases] == ["streamingllm", "vanilla"]

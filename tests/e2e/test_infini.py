"""`--model longmem --model_args method=infini` through the stock `lm_eval` CLI on the tiny model
(context 128), with 16-token segments and inputs of several segments, some longer than the base
context: nothing is refused, and the results record the method and its arguments."""

from tests.helpers.cli_runs import BIN, results_of, run

INFINI = "method=infini,segment_length=16,update=delta"


def test_forgetting_curve_beyond_the_base_context(tiny_model_dir, corpus_file, tmp_path):
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},{INFINI}",
            "--tasks",
            "forgetting_curve",
            "--metadata",
            f"fc_corpus={corpus_file}",
            "fc_lengths=[8,40,100]",
            "fc_samples=2",
            "fc_seed=3",
            "--output_path",
            str(out),
        ]
    )
    results = results_of(out)
    curve = results["results"]["forgetting_curve"]["curve,none"]
    assert [p["length"] for p in curve["points"]] == [8, 40, 100]  # 201 tokens: 13 segments, > 128
    assert all(0 <= p["copy_mean"] <= 1 and p["num_samples"] == 2 for p in curve["points"])
    config = results["config"]
    assert config["longmem_method"] == "infini" and config["longmem_scoring"] == "infini_segments"
    assert config["longmem_method_args"] == {
        "segment_length": 16,
        "update": "delta",
        "beta_init": -4.0,
        "read_memory": True,
    }
    assert config["longmem_training_length"] == 128 and config["longmem_context_length"] == 1 << 20


def test_passkey_generation_segment_by_segment(tiny_model_dir, tmp_path):
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},{INFINI}",
            "--tasks",
            "longmem_passkey",
            "--metadata",
            "pk_lengths=[200]",
            "pk_depths=[0,100]",
            "pk_samples=1",
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    results = results_of(out)
    assert results["results"]["longmem_passkey"]["grid,none"]["num_samples"] == [[1], [1]]  # depths x lengths
    (samples_file,) = out.rglob("samples_longmem_passkey_*.jsonl")
    assert len(samples_file.read_text().splitlines()) == 2
    assert results["config"]["longmem_method"] == "infini"

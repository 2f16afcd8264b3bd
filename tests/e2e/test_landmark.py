"""A Landmark checkpoint in the study's own format (`model_type: llama_with_landmark`, as the
official code saves it) through the stock `lm_eval` CLI with no method= given, on a tiny landmark
export (blocks of 4, trained length 32: windows of 20 with top_k 2): the model type loads and
selects the method, the passkey prompt, several windows long, is generated without a landmark in
the answer, and the results record the method with the layout read from the checkpoint."""

import json

from tests.helpers.cli_runs import BIN, results_of, run
from tests.helpers.landmark_checkpoint import study_copy


def test_passkey_through_lm_eval_on_a_checkpoint_in_the_studys_format(tiny_landmark_dir, tmp_path):
    study_dir = study_copy(tiny_landmark_dir, tmp_path / "model")
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={study_dir},top_k=2",
            "--tasks",
            "longmem_passkey",
            "--metadata",
            "pk_lengths=[120]",
            "pk_depths=[0]",
            "pk_samples=1",
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    results = results_of(out)
    config = results["config"]
    assert config["longmem_method"] == "landmark" and config["longmem_scoring"] == "landmark_windows"
    assert config["longmem_method_args"] == {
        "block_size": 4,
        "top_k": 2,
        "train_context_length": 32,
        "selection": "per_token_and_head",
        "landmark_in_loss": True,
        "retrieval": True,
    }
    (samples_file,) = out.rglob("samples_longmem_passkey_*.jsonl")
    (sample,) = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert "<landmark>" not in json.dumps(sample["resps"])

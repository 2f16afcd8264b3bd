"""A generation task whose answers are all empty (a model that ends its turn at once, as an instruct
model does without its chat template) is said so in the run's log and in the results file, with
the count and the likely cause."""

from tests.helpers.booksum_fixture import write_booksum_fixture
from tests.helpers.cli_runs import BIN, results_of, run
from tests.helpers.tiny_llama import build_tiny_model


def _model_that_ends_at_once(directory):
    """The tiny Llama with its final norm zeroed: every logit is 0, so greedy decoding picks token 0,
    which this copy declares its end-of-text token."""
    import json

    import torch
    from safetensors.torch import load_file, save_file

    build_tiny_model(directory)
    weights = load_file(str(directory / "model.safetensors"))
    weights["model.norm.weight"] = torch.zeros_like(weights["model.norm.weight"])
    save_file(weights, str(directory / "model.safetensors"), metadata={"format": "pt"})
    for name, key in (("config.json", "eos_token_id"), ("generation_config.json", "eos_token_id")):
        path = directory / name
        if path.exists():
            config = json.loads(path.read_text())
            config[key] = 0
            path.write_text(json.dumps(config))
    tokenizer_config = json.loads((directory / "tokenizer_config.json").read_text())
    tokenizer_config["eos_token"] = "<unk>"
    (directory / "tokenizer_config.json").write_text(json.dumps(tokenizer_config))
    return directory


def _booksum(model_dir, data, out):
    return run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={model_dir},method=vanilla",
            "--device",
            "cpu",
            "--tasks",
            "longmem_booksum",
            "--metadata",
            f"bs_data={data}",
            "bs_lengths=[16]",
            "bs_greedy=true",
            "--gen_kwargs",
            "max_gen_toks=4",
            "--output_path",
            str(out),
        ]
    )


def test_all_empty_answers_are_said_and_recorded(tmp_path):
    model = _model_that_ends_at_once(tmp_path / "model")
    proc = _booksum(model, write_booksum_fixture(tmp_path / "booksum"), tmp_path / "out")
    assert "longmem_booksum: 3 of 3 generated answers are empty" in proc.stderr
    assert "--apply_chat_template" in proc.stderr
    recorded = results_of(tmp_path / "out")["empty_generations"]["longmem_booksum"]
    assert recorded["empty"] == 3 and recorded["generated"] == 3
    assert "--apply_chat_template" in recorded["likely_cause"]

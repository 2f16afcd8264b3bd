"""Exports load with `--model longmem --model_args pretrained=<dir>` and nothing else: the config
records the method (and its rope_parameters) and the run; LongLoRA also exports its adapter."""

import json
from pathlib import Path

import pytest
import torch

from lm_eval_longmem.harness.run_name import run_folder_name
from lm_eval_longmem.models.method_framework.recorded import read_recorded_method
from tests.helpers.cli_runs import BIN, run
from tests.helpers.training_helpers import run_recipe


def lm_eval(model_args: str, corpus_file, out: Path) -> dict:
    args = [
        str(BIN / "lm_eval"),
        "--model",
        "longmem",
        "--model_args",
        model_args,
        "--tasks",
        "forgetting_curve",
        "--metadata",
        f"fc_corpus={corpus_file}",
        "fc_max_length=40",
        "fc_points=2",
        "fc_samples=1",
        "--output_path",
        str(out),
    ]
    proc = run(args, check=False)  # a warm run (tests/helpers/warm_commands.py)
    assert proc.returncode == 0, proc.stderr[-4000:]
    (path,) = out.rglob("results_*.json")
    return json.loads(path.read_text())


@pytest.mark.parametrize(
    "recipe, rope_type, factor",
    [("tiny-pi", "linear", 4.0), ("tiny-ntk", "longmem_ntk", 7.0), ("tiny-yarn", "yarn", 4.0)],
)
def test_rope_exports_record_method_and_run(recipe, rope_type, factor, tiny_model_dir, corpus_file, tmp_path):
    summary = run_recipe(recipe, tiny_model_dir, corpus_file, tmp_path / "run", max_steps=2)
    config = json.loads((Path(summary["export"]) / "config.json").read_text())
    assert config["rope_parameters"]["rope_type"] == rope_type and config["rope_parameters"]["factor"] == factor
    assert config["rope_parameters"]["rope_theta"] == 10000.0 and config["max_position_embeddings"] == 128
    assert (
        config["longmem_method"] == recipe.removeprefix("tiny-") and config["longmem_method_args"]["factor"] == factor
    )
    run = config["longmem_training"]
    assert (run["recipe"], run["steps"], run["data"], run["tokens"]) == (recipe, 2, str(corpus_file), 2 * 4 * 32)
    assert read_recorded_method(summary["export"])[0] == recipe.removeprefix("tiny-")


def test_yarn_export_evaluates_through_the_real_lm_eval_cli(tiny_model_dir, corpus_file, tmp_path):
    summary = run_recipe("tiny-yarn", tiny_model_dir, corpus_file, tmp_path / "run", max_steps=2)
    results = lm_eval(f"pretrained={summary['export']}", corpus_file, tmp_path / "eval")
    assert results["config"]["longmem_method"] == "yarn"
    assert results["config"]["longmem_method_args"]["factor"] == 4.0
    assert results["config"]["longmem_context_length"] == 512  # factor 4 over the tiny model's 128
    assert "copy_acc@40,none" in results["results"]["forgetting_curve"]


def test_longlora_exports_adapter_extras_and_a_merged_model(tiny_model_dir, corpus_file, tmp_path):
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    summary = run_recipe("tiny-longlora", tiny_model_dir, corpus_file, tmp_path / "run", max_steps=3)
    export = Path(summary["export"])
    extras = load_file(str(export / "adapter" / "trainable_extras.safetensors"))
    assert any("embed_tokens" in k for k in extras) and any("norm" in k for k in extras)
    merged = AutoModelForCausalLM.from_pretrained(export)
    assert merged.config._attn_implementation != "longmem_s2_attention"
    assert merged.config.longmem_method == "pi" and merged.config.rope_parameters["rope_type"] == "linear"
    # base + adapter + extras rebuilds the merged model
    base = AutoModelForCausalLM.from_pretrained(export)  # same architecture; reload the base weights into it
    base.load_state_dict(AutoModelForCausalLM.from_pretrained(tiny_model_dir).state_dict())
    rebuilt = PeftModel.from_pretrained(base, export / "adapter")
    rebuilt.load_state_dict(extras, strict=False)
    ids = torch.arange(4, 40).unsqueeze(0)
    with torch.no_grad():
        assert torch.allclose(rebuilt(ids).logits, merged(ids).logits, atol=1e-5)
        original = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
        assert not torch.allclose(original.model.embed_tokens.weight, merged.model.embed_tokens.weight)


def test_fox_and_matched_transformer_from_scratch(tiny_model_dir, corpus_file, tmp_path):
    exports = {}
    for name in ("tiny-fox", "tiny-transformer"):
        summary = run_recipe(
            name,
            tiny_model_dir,
            corpus_file,
            tmp_path / name,
            max_steps=2,
            micro_batch_size=2,
            grad_accum_steps=1,
            **{"model_config.max_position_embeddings": 128},
        )
        exports[name] = Path(summary["export"])
    types = {n: json.loads((d / "config.json").read_text())["model_type"] for n, d in exports.items()}
    assert types == {"tiny-fox": "forgetting_transformer-project_fox", "tiny-transformer": "transformer-project_fox"}
    sizes = {n: (d / "model.safetensors").stat().st_size for n, d in exports.items()}
    assert abs(sizes["tiny-fox"] - sizes["tiny-transformer"]) / sizes["tiny-fox"] < 0.02  # matched size
    results = lm_eval(f"pretrained={exports['tiny-fox']}", corpus_file, tmp_path / "eval")
    assert results["config"]["longmem_method"] == "fox"
    assert results["config"]["longmem_method_args"]["architecture"] == "fox-pro"
    transformer_folder = run_folder_name(f"pretrained={exports['tiny-transformer']}")  # also fox, named apart
    assert transformer_folder.endswith("__fox__architecture-transformer-pro")
    assert "copy_acc@40,none" in results["results"]["forgetting_curve"]


def test_infini_gates_learn_then_the_passkey_finetune_and_lm_eval(tiny_model_dir, corpus_file, tmp_path):
    from lm_eval_longmem.models.compressive_memory.checkpoint import read_gates

    segment = {"method_args.segment_length": 16}
    first = run_recipe("tiny-infini", tiny_model_dir, corpus_file, tmp_path / "pretrain", max_steps=2, **segment)
    gates = read_gates(first["export"])
    assert gates.shape == (2, 4) and (gates + 4.0).abs().max() > 1e-3  # moved from beta_init -4 at gate_lr 0.01
    config = json.loads((Path(first["export"]) / "config.json").read_text())
    assert config["longmem_method"] == "infini" and config["longmem_method_args"]["segment_length"] == 16
    assert config["longmem_training"]["recipe"] == "tiny-infini"
    second = run_recipe(
        "tiny-infini-passkey", first["export"], "passkey", tmp_path / "passkey", max_steps=2, seq_len=96, **segment
    )  # one whole passkey instance per row
    assert not torch.equal(read_gates(second["export"]), gates)
    results = lm_eval(f"pretrained={second['export']}", corpus_file, tmp_path / "eval")
    assert results["config"]["longmem_method"] == "infini"
    assert results["config"]["longmem_method_args"]["segment_length"] == 16


def test_method_vanilla_continues_pretraining_with_the_rope_unchanged(tiny_model_dir, corpus_file, tmp_path):
    """The same-budget control of an extension run: a RoPE recipe with method=vanilla trains the
    weights and leaves rope_parameters and the context length as the base model has them."""
    from safetensors.torch import load_file

    summary = run_recipe(
        "tiny-yarn", tiny_model_dir, corpus_file, tmp_path / "run", max_steps=2, method="vanilla", method_args="{}"
    )
    export = Path(summary["export"])
    config = json.loads((export / "config.json").read_text())
    assert config["longmem_method"] == "vanilla" and config["longmem_method_args"] == {}
    assert config["rope_parameters"]["rope_type"] == "default" and config["max_position_embeddings"] == 128
    before, after = load_file(Path(tiny_model_dir) / "model.safetensors"), load_file(export / "model.safetensors")
    assert any(not torch.equal(before[name], after[name]) for name in before)


def test_tokenizer_key_sets_the_from_scratch_vocabulary(tiny_model_dir, corpus_file, tmp_path, monkeypatch):
    """Also on a machine without the embedded default model (a GPU node): the tokenizer key is enough."""
    from transformers import AutoTokenizer

    from lm_eval_longmem.models.checkpoint import default_model

    def missing():
        raise default_model.DefaultModelMissingError("the embedded default model is not installed here")

    monkeypatch.setattr(default_model, "default_model_dir", missing)

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    tokenizer.add_tokens(["zyzzyva", "quixotic"])
    tokenizer.save_pretrained(tmp_path / "tokenizer")
    llama = (
        "{model_type: llama, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, "
        "num_attention_heads: 2, num_key_value_heads: 2, max_position_embeddings: 64}"
    )
    summary = run_recipe(
        "tiny-transformer",
        tiny_model_dir,
        corpus_file,
        tmp_path / "run",
        max_steps=2,
        model_config=llama,
        tokenizer=tmp_path / "tokenizer",
        model="default",
    )
    export = Path(summary["export"])
    assert json.loads((export / "config.json").read_text())["vocab_size"] == len(tokenizer)
    assert "zyzzyva" in AutoTokenizer.from_pretrained(export).get_vocab()

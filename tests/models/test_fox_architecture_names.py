"""FoX and the Transformer baseline trained in the FoX code (recipes `fox`/`transformer`) both run
as method `fox`; everywhere a user reads a method they must still read differently: the
results config, the run folder, the leaderboard row and the figure legends and titles."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from lm_eval_longmem.cli import main
from lm_eval_longmem.harness.run_name import run_folder_name
from lm_eval_longmem.models.checkpoint.fox_architecture import architecture_arguments
from lm_eval_longmem.report.discovery import collect_runs
from lm_eval_longmem.report.leaderboard import build_leaderboard
from tests.helpers.figures import legend_texts
from tests.helpers.fox_fixtures import json_tokenizer
from tests.helpers.results_files import forgetting_metrics, lm_eval_results, table_rows, write

RECIPES = Path(__file__).resolve().parents[2] / "training" / "recipes"
OFFICIAL = {  # the switches of the released checkpoints, by their names
    "fox-pro": dict(
        fgate_type="full",
        use_rope=False,
        use_output_gate=True,
        use_output_norm=True,
        qk_norm=True,
        use_k_shift=True,
        use_v_shift=True,
    ),
    "fox-llama": dict(fgate_type="full", use_rope=False),
    "transformer-pro": dict(
        fgate_type="none",
        use_rope=True,
        use_output_gate=True,
        use_output_norm=True,
        qk_norm=True,
        use_k_shift=True,
        use_v_shift=True,
    ),
    "transformer-llama": dict(fgate_type="none", use_rope=True),
}


def export_like_training(recipe: str, root: Path) -> Path:
    """`<root>/<recipe>/export` as `lm-eval-longmem train <recipe>` writes it: the recipe's
    model_config through AutoConfig (so config.json leaves out class defaults), random weights."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    import lm_eval_longmem.models.fox  # noqa: F401 (registers the FoX model types)

    directory = root / recipe / "export"
    tokenizer = json_tokenizer(root / recipe / "bpe")
    fields = yaml.safe_load((RECIPES / f"{recipe}.yaml").read_text())["model_config"]
    end = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    config = AutoConfig.for_model(
        fields.pop("model_type"),
        **fields,
        vocab_size=len(tokenizer),
        max_position_embeddings=256,
        bos_token_id=end,
        eos_token_id=end,
    )
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    return {recipe: export_like_training(recipe, root) for recipe in ("tiny-fox", "tiny-transformer")}


@pytest.fixture(scope="module")
def results_configs(exports) -> dict[str, dict]:
    """What the wrapper writes into lm-eval's results config for each export."""
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    return {recipe: LongMemLM(pretrained=str(path), device="cpu").get_model_info() for recipe, path in exports.items()}


@pytest.mark.parametrize("name", list(OFFICIAL))
def test_the_released_variants_are_named_as_released(name):
    model_type = "transformer-project_fox" if name.startswith("transformer") else "forgetting_transformer-project_fox"
    assert architecture_arguments({"model_type": model_type, **OFFICIAL[name]}) == {"architecture": name}


def test_a_mixed_variant_is_its_nearest_name_plus_the_switches_that_differ():
    bias_only = {**OFFICIAL["fox-pro"], "fgate_type": "bias_only", "qk_norm": False}
    assert architecture_arguments(bias_only) == {"architecture": "fox-pro", "fgate_type": "bias_only", "qk_norm": False}
    # config.json leaves out what equals the class's defaults: the Transformer type's are RoPE on, no gate
    assert architecture_arguments({"model_type": "transformer-project_fox"}) == {"architecture": "transformer-llama"}
    assert architecture_arguments({"model_type": "llama"}) == {} and architecture_arguments({}) == {}


def test_the_results_config_names_the_architecture(results_configs):
    fox, transformer = results_configs["tiny-fox"], results_configs["tiny-transformer"]
    assert fox["longmem_method"] == transformer["longmem_method"] == "fox"
    assert fox["longmem_method_args"]["architecture"] == "fox-pro"
    assert transformer["longmem_method_args"]["architecture"] == "transformer-pro"
    assert transformer["longmem_method_args"]["fgate_type"] == "none" and transformer["longmem_method_args"]["use_rope"]


def test_run_folders_differ_by_architecture(exports):
    assert run_folder_name(f"pretrained={exports['tiny-fox']}") == "tiny-fox__export__fox__architecture-fox-pro"
    assert run_folder_name({"pretrained": str(exports["tiny-transformer"]), "method": "fox"}) == (
        "tiny-transformer__export__fox__architecture-transformer-pro"
    )


@pytest.fixture
def fox_and_transformer_results(exports, results_configs, tmp_path) -> Path:
    """One forgetting-curve results file per export, as `lm_eval --model longmem` writes them."""
    for recipe, path in exports.items():
        info = results_configs[recipe]
        data = lm_eval_results(
            {"forgetting_curve": forgetting_metrics([8, 64, 256], [1.0, 0.9, 0.2], fine=8, coarse=64)},
            method="fox",
            method_args=info["longmem_method_args"],
            model_args={"pretrained": str(path)},
            pretrained=str(path),
        )
        write(tmp_path / "out" / run_folder_name(f"pretrained={path}") / "results_2026-01-01T00-00-00.json", data)
    return tmp_path / "out"


def test_leaderboard_rows_differ_by_architecture(fox_and_transformer_results, capsys):
    assert main(["leaderboard", str(fox_and_transformer_results)]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert [(row["method"], row["arguments"]) for row in rows] == [
        ("fox", "architecture=fox-pro"),
        ("fox", "architecture=transformer-pro"),
    ]
    board = build_leaderboard(collect_runs([fox_and_transformer_results]).runs)
    assert len({row.run.identity for row in board.rows}) == 2


@pytest.mark.parametrize("overlay", [False, True], ids=["panels", "overlay"])
def test_figures_name_the_architecture_and_each_model(fox_and_transformer_results, tmp_path, saved, overlay):
    assert (
        main(
            [
                "plot",
                str(fox_and_transformer_results),
                "-o",
                str(tmp_path / "fc.png"),
                *(["--overlay"] if overlay else []),
            ]
        )
        == 0
    )
    (fig,) = saved
    if overlay:
        (ax,) = fig.axes
        texts = " ".join(legend_texts(ax))
        assert "tiny-fox/export · fox (architecture=fox-pro): copy" in texts
        assert "tiny-transformer/export · fox (architecture=transformer-pro): copy" in texts
        assert ax.get_title() == "Forgetting curves"  # two models: none is claimed as shared
    else:
        titles = [ax.get_title().replace("\n", " ") for ax in fig.axes]
        assert titles[0].startswith("tiny-fox/export · fox (architecture=fox-pro)")
        assert titles[1].startswith("tiny-transformer/export · fox (architecture=transformer-pro)")

"""The shipped tiny recipes as they are (the embedded SmolLM2-135M, the embedded Shakespeare):
train, export, evaluate through the real `lm_eval` CLI. Minutes on two CPU cores: slow tier."""

import json
import os
import subprocess

import pytest

from tests.helpers.cli_runs import BIN

pytestmark = pytest.mark.slow


def run(args):
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    proc = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


@pytest.mark.parametrize("recipe, method", [("tiny-yarn", "yarn"), ("tiny-longlora", "pi")])
def test_shipped_tiny_recipe_trains_and_evaluates(recipe, method, tmp_path):
    run([str(BIN / "lm-eval-longmem"), "train", recipe, f"output_dir={tmp_path / 'run'}", "progress_bar=false"])
    export = tmp_path / "run" / "export"
    out = tmp_path / "eval"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={export}",
            "--tasks",
            "forgetting_curve",
            "--metadata",
            "fc_corpus=shakespeare",
            "fc_max_length=64",
            "fc_points=2",
            "fc_samples=2",
            "--output_path",
            str(out),
        ]
    )
    (results,) = out.rglob("results_*.json")
    config = json.loads(results.read_text())["config"]
    assert config["longmem_method"] == method and config["longmem_context_length"] == 4 * 8192

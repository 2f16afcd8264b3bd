"""Mistakes that once ended in tracebacks, each one line and exit 2 before anything heavy loads
(through the real `lm_eval`): a CLEX checkpoint given to another method or to `--model hf`, a
checkpoint folder missing its config, weights or tokenizer, `--log_samples` without
`--output_path`; and `lm-eval-longmem default-model`, which the README's `--model hf` example uses."""

import shutil
from pathlib import Path

import pytest

from lm_eval_longmem.errors import USAGE_EXIT_STATUS
from lm_eval_longmem.models.method_registry.resolution import CheckpointNeedsItsMethodError, resolve_method
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message, started_nothing_heavy
from tests.methods.test_clex_model import official_clex_checkpoint


@pytest.fixture(scope="module")
def clex_dir(tiny_model_dir, tmp_path_factory):
    return official_clex_checkpoint(tiny_model_dir, tmp_path_factory.mktemp("clex") / "official")


def _lm_eval(model, model_args, *extra):
    command = [str(BIN / "lm_eval"), "--model", model, "--model_args", model_args, "--tasks", "forgetting_curve"]
    return run([*command, "--device", "cpu", *extra], check=False)


@pytest.mark.parametrize("method", ["vanilla", "yarn"])
def test_another_method_on_a_clex_checkpoint_is_refused(clex_dir, method):
    with pytest.raises(CheckpointNeedsItsMethodError, match="method=clex"):
        resolve_method({"pretrained": str(clex_dir), "method": method})
    assert resolve_method({"pretrained": str(clex_dir)}).name == "clex"
    assert resolve_method({"pretrained": str(clex_dir), "method": "clex"}).name == "clex"


def test_model_hf_on_a_clex_checkpoint_is_one_line(clex_dir):
    proc = _lm_eval("hf", f"pretrained={clex_dir}")
    assert_one_message(proc, "is a clex checkpoint", "--model hf", "--model longmem")
    assert proc.returncode == USAGE_EXIT_STATUS


@pytest.mark.parametrize(
    "removed, named",
    [(["config.json"], "has no config.json"), (["model.safetensors"], "model.safetensors is missing")]
    + [(["tokenizer.json", "tokenizer_config.json"], "tokenizer.json is missing")],
    ids=["config", "weights", "tokenizer"],
)
def test_a_folder_missing_a_file_is_one_line_naming_it(tiny_model_dir, tmp_path, removed, named):
    broken = Path(shutil.copytree(tiny_model_dir, tmp_path / "broken"))
    for name in removed:
        (broken / name).unlink()
    proc = _lm_eval("longmem", f"pretrained={broken}")
    assert_one_message(proc, named)
    assert proc.returncode == USAGE_EXIT_STATUS and started_nothing_heavy(proc)


def test_log_samples_without_output_path_is_a_wrong_command_line(tiny_model_dir):
    proc = _lm_eval("longmem", f"pretrained={tiny_model_dir}", "--log_samples")
    assert_one_message(proc, "--log_samples", "--output_path")
    assert proc.returncode == USAGE_EXIT_STATUS


def test_default_model_prints_a_folder_model_hf_can_load():
    proc = run([str(BIN / "lm-eval-longmem"), "default-model"])
    folder = Path(proc.stdout.strip())
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    assert (folder / "tokenizer.json").is_file()


def test_another_method_on_a_landmark_checkpoint_runs_and_says_what_it_leaves_out(tiny_model_dir, tmp_path, caplog):
    """transformers builds a Landmark checkpoint's weights without the method: method= wins, with a word."""
    from tests.helpers.landmark_checkpoint import build_tiny_landmark, study_copy

    study = study_copy(build_tiny_landmark(tmp_path / "plain", tiny_model_dir), tmp_path / "study")
    with caplog.at_level("WARNING"):
        assert resolve_method({"pretrained": str(study), "method": "yarn"}).name == "yarn"
    assert "is a landmark checkpoint" in caplog.text and "method=yarn runs the weights without them" in caplog.text

"""`method=kvpress` through the real `lm_eval` and `lm-eval-longmem` commands (the method itself:
methods/test_kvpress.py).

* without kvpress: one `error:` line naming the extra, before any model loads, no traceback
  (runs in both virtualenvs: in .venv-kvpress the same lm_eval entry point runs with kvpress
  hidden);
* with kvpress: a scoring and a generation task in one run under a press, the results recorded
  with the press and its arguments, the results folder named by harness/run_name.py, and the
  leaderboard row.

Each `lm_eval` run costs its start-up (~5 s when it stops at the preflight check, ~15 s with a
model on 2 cores), so both tasks share one run.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from tests.helpers.cli_runs import BIN, run
from tests.helpers.markers import requires_kvpress
from tests.helpers.tiny_llama import build_tiny_model

KVPRESS_INSTALLED = importlib.util.find_spec("kvpress") is not None
EXTRA_HINT = "pip install 'lm-eval-longmem[kvpress]'"


def lm_eval_without_kvpress(folder) -> list[str]:
    """The real `lm_eval` where kvpress is not installed (the main .venv); where it is, a copy of
    this virtualenv's `lm_eval` console script, also named lm_eval (so the start-up hook takes it
    for the CLI), that first makes `import kvpress` fail as it fails without the package."""
    if not KVPRESS_INSTALLED:
        return [str(BIN / "lm_eval")]
    script = (BIN / "lm_eval").read_text().split("\n", 1)[1]  # without its #! line
    copy = folder / "lm_eval"
    copy.write_text("import sys\nsys.modules['kvpress'] = None  # as if not installed\n" + script)
    return [sys.executable, str(copy)]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("kvpress_cli") / "tiny", max_position_embeddings=1024)


def test_lm_eval_without_kvpress_is_one_error_line_naming_the_extra(model_dir, tmp_path):
    command = lm_eval_without_kvpress(tmp_path)
    proc = run(
        [
            *command,
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={model_dir},method=kvpress,press=snapkv",
            "--tasks",
            "forgetting_curve",
        ],
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, proc.stderr[-3000:]
    assert (
        errors[0].startswith("lm_eval: error: method=kvpress needs NVIDIA's kvpress package")
        and EXTRA_HINT in errors[0]
    )
    assert "Initializing longmem model" not in proc.stderr  # the start-up check, before the model loads
    # exit status 1, as every error of ours lm_eval prints as one message (test_errors_without_traceback.py;
    # the start-up hook's excepthook): a missing package is not a command-line typo, which exit 2 answers
    # (test_command_line_mistakes.py)
    assert proc.returncode == 1


@requires_kvpress
def test_a_scoring_and_a_generation_task_under_a_press_end_to_end(model_dir, corpus_file, tmp_path):
    from lm_eval_longmem.harness.run_name import run_folder_name

    out = tmp_path / "out"
    model_args = f"pretrained={model_dir},method=kvpress,press=snapkv,compression_ratio=0.5,window_size=8"
    lm_eval = BIN / "lm_eval"  # this virtualenv's: the one with kvpress
    run(
        [
            str(lm_eval),
            "--model",
            "longmem",
            "--model_args",
            model_args,
            "--tasks",
            "forgetting_curve,longmem_passkey",
            "--metadata",
            f"fc_corpus={corpus_file}",
            "fc_max_length=40",
            "fc_points=3",
            "fc_samples=2",
            "fc_seed=3",
            "pk_lengths=[200]",
            "pk_depths=[50]",
            "pk_samples=1",
            "--output_path",
            str(out),
        ]
    )

    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    assert folder.name == run_folder_name(model_args)
    assert folder.name == "tiny__kvpress__compression_ratio-0.5_press-snapkv_window_size-8"
    (results_file,) = folder.glob("results_*.json")
    results = json.loads(results_file.read_text())
    config = results["config"]
    assert config["longmem_method"] == "kvpress"
    assert config["longmem_method_args"] == {
        "press": "snapkv",
        "compression_ratio": 0.5,
        "window_size": 8,
        "kernel_size": 5,
    }
    assert config["longmem_scoring"] == "kvpress:snapkv"
    curve = results["results"]["forgetting_curve"]["curve,none"]
    assert [p["length"] for p in curve["points"]] == [8, 24, 40]
    grid = results["results"]["longmem_passkey"]
    assert "acc@len200,none" in grid and 0 <= grid["acc,none"] <= 1

    board = run([str(BIN / "lm-eval-longmem"), "leaderboard", str(out)])
    (row,) = [line for line in board.stdout.splitlines() if "| kvpress |" in line]
    arguments = "press=snapkv, compression_ratio=0.5, window_size=8"
    assert f"| {Path(model_dir).name} | kvpress | {arguments} |" in row, board.stdout  # a local model by its folder

"""Messages that said nothing true or useful, gone: transformers' "Missing validation function ...
'clex'" at each config read of a CLEX checkpoint (also before method=clex is imported), lm-eval's
"Using cache at <path>_rank0.db" for a longmem model (that file is never made: our line names the
real one), and `--include_path /no/such` reported as an unknown task instead of a missing path."""

import logging
import subprocess
import sys

import pytest

from lm_eval_longmem.errors import USAGE_EXIT_STATUS
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message
from tests.methods.test_clex_model import official_clex_checkpoint


def test_reading_a_clex_config_where_models_load_prints_no_validation_warning(tiny_model_dir, tmp_path):
    clex = official_clex_checkpoint(tiny_model_dir, tmp_path / "clex")
    code = (
        "from lm_eval_longmem.models.checkpoint.model_types import register_model_types\n"
        "register_model_types()\n"
        "from transformers import AutoConfig\n"
        f"AutoConfig.from_pretrained({str(clex)!r})\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Missing validation function" not in proc.stderr


def test_lm_eval_s_cache_path_line_is_dropped_once_a_longmem_model_is_built(tiny_model_dir, caplog):
    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    LongMemLM(pretrained=str(tiny_model_dir), device="cpu")
    with caplog.at_level(logging.INFO, logger="lm_eval.evaluator"):
        logging.getLogger("lm_eval.evaluator").info("Using cache at /tmp/x_rank0.db")
        logging.getLogger("lm_eval.evaluator").info("Building contexts")
    assert "Using cache at" not in caplog.text and "Building contexts" in caplog.text


@pytest.mark.parametrize("model", ["longmem", "hf"])
def test_a_missing_include_path_is_named(tiny_model_dir, tmp_path, model):
    proc = run(
        [str(BIN / "lm_eval"), "--model", model, "--model_args", f"pretrained={tiny_model_dir}"]
        + ["--tasks", "my_task", "--include_path", str(tmp_path / "no" / "such")],
        check=False,
    )
    assert_one_message(proc, "--include_path", "no such file or directory")
    assert proc.returncode == USAGE_EXIT_STATUS

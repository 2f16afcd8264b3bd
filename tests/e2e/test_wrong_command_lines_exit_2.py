"""Wrong command lines found late before now exit 2 with one line, before anything loads: a local
data option naming no file (`bs_data=/no/such/dir`, found after the model loaded, exit 1), a
figure suffix nobody writes (`plot-booksum -o x.jpgg`, exit 1), `--model_args device=cpu` (a
TypeError traceback: lm-eval passes --device too), `--num_fewshot` on our tasks (ignored) and a
passkey length too short for its prompt (found after the model loaded)."""

import pytest

from lm_eval_longmem.errors import USAGE_EXIT_STATUS
from tests.helpers.cli_runs import BIN, run
from tests.helpers.error_messages import assert_one_message, started_nothing_heavy


def test_a_local_data_option_naming_nothing_is_a_wrong_command_line(tiny_model_dir, tmp_path):
    proc = run(
        [str(BIN / "lm_eval"), "--model", "longmem", "--model_args", f"pretrained={tiny_model_dir}"]
        + ["--tasks", "longmem_booksum", "--metadata", f"bs_data={tmp_path / 'no' / 'such'}", "--device", "cpu"],
        check=False,
    )
    assert_one_message(proc, "bs_data=", "no such file or directory")
    assert proc.returncode == USAGE_EXIT_STATUS and started_nothing_heavy(proc)


def test_a_figure_suffix_nobody_writes_is_a_wrong_command_line(tmp_path):
    proc = run([str(BIN / "lm-eval-longmem"), "plot-booksum", str(tmp_path), "-o", "x.jpgg"], check=False)
    assert_one_message(proc, "unsupported suffix '.jpgg'")
    assert proc.returncode == USAGE_EXIT_STATUS


@pytest.mark.parametrize(
    "extra, expected",
    [
        (["--model_args", "method=vanilla,device=cpu"], "give it as --device cpu instead"),
        (["--num_fewshot", "2"], "argument --num_fewshot: 2 does not apply to longmem_passkey"),
        (["--metadata", "pk_lengths=[10]"], "length 10 is too short"),
    ],
    ids=["device-in-model-args", "num-fewshot-on-our-task", "passkey-length-too-short"],
)
def test_more_wrong_command_lines_stop_before_the_model_loads(tiny_model_dir, extra, expected):
    command = [str(BIN / "lm_eval"), "--model", "longmem", "--tasks", "longmem_passkey"]
    if "--model_args" not in extra:
        command += ["--model_args", f"pretrained={tiny_model_dir}"]
    proc = run([*command, *extra], check=False)
    assert_one_message(proc, expected)
    assert proc.returncode == USAGE_EXIT_STATUS and started_nothing_heavy(proc)

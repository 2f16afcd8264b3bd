"""Wrong command lines found late before now exit 2 with one line, before anything loads: a local
data option naming no file (`bs_data=/no/such/dir`, found after the model loaded, exit 1) and a
figure suffix nobody writes (`plot-booksum -o x.jpgg`, exit 1)."""

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

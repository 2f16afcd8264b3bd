"""Reading a passkey grid from a results file and drawing its heatmap."""

import json

import pytest

from lm_eval_longmem.cli import main
from lm_eval_longmem.report.results_files import load_passkey_grid


def write_results(path, grid):
    path.write_text(
        json.dumps(
            {
                "results": {"longmem_passkey": {"acc,none": grid["overall"], "grid,none": grid}},
                "config": {"longmem_pretrained": "tiny", "longmem_method": "vanilla", "longmem_method_args": {}},
            }
        )
    )
    return path


GRID = {
    "lengths": [512, 1024],
    "depths": [0, 50, 100],
    "accuracy": [[1.0, 0.5], [1.0, None], [0.0, 1.0]],
    "num_samples": [[2, 2], [2, 0], [2, 2]],
    "overall": 0.7,
    "length_unit": "tokens",
}


def test_load_passkey_grid(tmp_path):
    run = load_passkey_grid(write_results(tmp_path / "results_1.json", GRID))
    assert run.lengths == (512, 1024) and run.depths == (0, 50, 100) and run.accuracy[1] == (1.0, None)
    assert run.label == "tiny · vanilla"


def test_a_results_file_without_the_grid_is_a_clear_error(tmp_path):
    path = tmp_path / "results_2.json"
    path.write_text(json.dumps({"results": {"forgetting_curve": {}}}))
    with pytest.raises(ValueError, match="no 'grid,none' metric.*tasks present: forgetting_curve"):
        load_passkey_grid(path)


def test_plot_passkey_cli_writes_a_png(tmp_path, capsys):
    write_results(tmp_path / "results_3.json", GRID)
    out = tmp_path / "pk.png"
    assert main(["plot-passkey", str(tmp_path), "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    assert "overall passkey accuracy 0.700" in capsys.readouterr().out

"""benchmarks/landmark_retrieval.py at its tiny size on the CPU: the C function timed against the PyTorch
path on the same inputs, with the same output; bad lengths are one message."""

from __future__ import annotations

import json

import pytest

from lm_eval_longmem.kernels.grouped_softmax import retrieval_cpu
from tests.helpers.benchmark_scripts import load_benchmark


@pytest.mark.skipif(not retrieval_cpu.LIBRARY.available(), reason="no C compiler builds it here")
def test_the_c_function_is_timed_against_the_pytorch_path(tmp_path, capsys):
    out = tmp_path / "retrieval.json"
    (row,) = load_benchmark("landmark_retrieval").main(["--tiny", "--device", "cpu", "--out-json", str(out)])
    assert json.loads(out.read_text())["rows"] == [row]
    assert row["windows"] == 8 and "triton" not in row
    torch_path, c = row["torch"], row["c"]
    assert torch_path["seconds"] > 0 and torch_path["ops"] > c["ops"]
    assert c["time_ratio"] == c["seconds"] / torch_path["seconds"]
    assert c["largest_difference"] < 1e-5
    assert "c / torch:" in capsys.readouterr().out


def test_a_length_that_is_not_whole_windows_is_refused(capsys):
    with pytest.raises(SystemExit):
        load_benchmark("landmark_retrieval").main(["--tiny", "--lengths", "60"])
    assert "each T must be a multiple of the window (8)" in capsys.readouterr().err

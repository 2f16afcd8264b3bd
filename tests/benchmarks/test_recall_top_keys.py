"""benchmarks/recall_top_keys.py at its tiny size on the CPU: the C scan against the PyTorch path (the
kernel needs CUDA), and, in the slow tier, the kernel in the Triton interpreter beside them, all
recalling the same slots."""

from __future__ import annotations

import json

import pytest

from tests.helpers.benchmark_scripts import load_benchmark
from tests.helpers.triton_interpreter import interpreted


def tiny_run(tmp_path, benchmark=None):
    out = tmp_path / "recall.json"
    arguments = ["--tiny", "--dtype", "float32", "--device", "cpu", "--out-json", str(out)]
    (row,) = (benchmark or load_benchmark("recall_top_keys")).main(arguments)
    assert json.loads(out.read_text())["rows"] == [row]
    assert row["recalling_chunks"] > 1
    assert row["torch"]["seconds"] > 0 and row["torch"]["ops"] > 0 and row["torch"]["host_reads"] == 0
    return row


def test_without_a_gpu_the_scan_is_timed_against_the_pytorch_path(tmp_path, monkeypatch, capsys):
    """As without TRITON_INTERPRET (which this process keeps: triton fixes its mode at first import)."""
    benchmark = load_benchmark("recall_top_keys")
    monkeypatch.setattr(benchmark, "kernel_runs_here", lambda device: False)
    row = tiny_run(tmp_path, benchmark)
    assert "triton" not in row
    scan = row["scan"]
    assert scan["same_slots"] is True and scan["host_reads"] == 0
    assert scan["time_ratio"] == scan["seconds"] / row["torch"]["seconds"]
    out = capsys.readouterr().out
    assert "scan / torch:" in out and "the kernel needs CUDA (or TRITON_INTERPRET=1)" in out


@pytest.mark.slow
def test_the_kernel_beside_the_pytorch_path_recalls_the_same(tmp_path):
    """In the interpreter a kernel call takes seconds: the slow tier."""
    if not interpreted():
        pytest.skip("triton was imported before TRITON_INTERPRET=1")
    row = tiny_run(tmp_path)
    kernel = row["triton"]
    assert kernel["same_slots"] is True and kernel["host_reads"] == 0
    assert kernel["time_ratio"] == kernel["seconds"] / row["torch"]["seconds"]

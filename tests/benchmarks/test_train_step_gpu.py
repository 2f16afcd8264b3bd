"""benchmarks/train_step_gpu.py at CPU size, so the script the GPU check runs cannot rot: the tiny
run goes through the real loop in bf16 autocast with gradient checkpointing, and its planning
(a shape that cannot fit is reported and run cut in depth) is checked without a GPU."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "train_step_gpu.py"


def load_benchmark():
    if str(SCRIPT.parent) not in sys.path:  # as when run as a script: its sibling modules import
        sys.path.insert(0, str(SCRIPT.parent))
    spec = importlib.util.spec_from_file_location("train_step_gpu", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # a benchmark smoke run (21 s); the loop, bf16 and checkpointing: tests/training
def test_tiny_cpu_run_has_a_finite_row_per_recipe(tmp_path):
    out = tmp_path / "rows.json"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--device", "cpu", "--mixed-precision", "bf16", "--out-json", str(out)],
        check=True,
        env=env,
        timeout=300,
    )
    rows = json.loads(out.read_text())["rows"]
    assert [r["recipe"] for r in rows] == ["fox", "yarn"]
    for row in rows:
        assert "error" not in row, row
        assert row["tokens_per_second"] > 0
        assert row["loss_finite"] and math.isfinite(row["loss"])
        assert row["compute_dtype"] == "bfloat16" and row["param_dtype"] == "float32"
        assert row["grad_checkpointing"] and row["layer_calls_per_micro_batch"] == 2  # forward + recomputation
        # the same batch as 2 accumulated micro-batches reports the same loss (not halved)
        assert abs(row["accumulation_check"]["first_step_ratio"] - 1) < 1e-3


def test_a_shape_that_cannot_fit_is_reported_then_run_cut_in_depth(monkeypatch, tmp_path, capsys):
    bench = load_benchmark()
    assert bench.fit_note(125_000_000, 80 * 2**30) == ""
    assert bench.fit_note(6_740_000_000, 80 * 2**30).startswith("does not fit: 6.74B params")

    def fake_worker(args, recipe, layers=0):
        if not layers:
            return {
                "recipe": recipe,
                "params": 6_740_000_000,
                "seq_len": 32768,
                "does_not_fit": True,
                "note": "does not fit",
            }
        return {"recipe": recipe, "error": "OutOfMemoryError: CUDA out of memory", "layers": layers, "cut_depth": True}

    monkeypatch.setattr(bench, "run_worker", fake_worker)
    out = tmp_path / "rows.json"
    monkeypatch.setattr(
        sys,
        "argv",
        ["train_step_gpu.py", "--device", "cpu", "--recipes", "yarn", "--fallback-layers", "4", "--out-json", str(out)],
    )
    bench.main()
    rows = json.loads(out.read_text())["rows"]
    assert [(r["recipe"], r.get("layers")) for r in rows] == [("yarn", None), ("yarn", 4)]
    assert "| yarn (4 layers) |" in capsys.readouterr().out

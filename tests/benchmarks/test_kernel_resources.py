"""The ahead-of-time kernel compile (benchmarks/kernel_resources.py): every kernel still compiles
for a GPU target on this CPU machine, and its report reads registers, spills and shared memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytest.importorskip("triton")


def test_every_kernel_compiles_for_sm_90_with_its_resources(tmp_path):
    """The default config of the forward, delta, dq and dk/dv kernels, bf16, D 64, and the grouped
    softmax's forward and backward on the study's row (896 keys in blocks of 64), the retrieval
    attention (blocks of 64 and 51) and LongCache's recall (float32), compiled for sm_90
    in a fresh process (the interpreter mode other tests set must not leak in)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"} | {"PYTHONPATH": str(REPO)}
    rows_file = tmp_path / "rows.json"
    result = subprocess.run(
        [
            sys.executable,
            "benchmarks/kernel_resources.py",
            "--head-dims",
            "64",
            "--dtypes",
            "bfloat16",
            "--targets",
            "90",
            "--default-config-only",
            "--no-padding",
            "--no-decode",
            "--grouped-rows",
            "896:64",
            "--jobs",
            "1",
            "--out-json",
            str(rows_file),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = {row["kernel"]: row for row in json.loads(rows_file.read_text())}
    assert set(rows) == {"forward", "delta", "dq", "dkdv", "gs_forward", "gs_backward", "retrieval", "recall"}
    for row in rows.values():
        assert not row["error"] and 0 < row["registers"] <= 255 and row["shared_bytes"] > 0
    assert rows["recall"]["stack_bytes"] == 0, rows["recall"]  # 64 x 64 on 8 warps: no spills (4 spill)
    for name in ("gs_forward", "gs_backward"):  # a 16x64 tile on 4 warps: 8 cells a thread, no spills
        assert rows[name]["stack_bytes"] == 0 and rows[name]["config"] == "fixed w4", rows[name]
        if row["estimated_shared_bytes"] is not None:  # the autotune pruner's estimate, against the compile
            assert 0.75 <= row["estimated_shared_bytes"] / row["shared_bytes"] <= 1.3, row
    # 128x64 blocks, 3 stages of bf16 K and V tiles: tens of KB of shared memory, which sm_90 has
    assert 16 * 1024 < rows["forward"]["shared_bytes"] <= 232_448
    assert "| forward | prefill | 64 | bfloat16 |" in result.stdout
    assert "| gs_forward | 896 keys, B 64 (16x64) | - | bfloat16 | fixed w4 |" in result.stdout
    assert "| retrieval | k 5, B 51, W 128 | 64 | bfloat16 | fixed |" in result.stdout


def test_the_table_marks_a_config_that_exceeds_a_devices_shared_memory(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import kernel_resources as tool
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    rows = [
        tool.Row("forward", "prefill", 128, "float32", "128x64 w4 s3", 80, 32, 33824, 230_400),
        tool.Row("forward", "prefill", 128, "float32", "128x64 w4 s3", 90, 32, 33824, 230_400),
    ]
    verdict = tool.fits(rows, rows[0])
    assert verdict == {"A100 (sm_80)": False, "H100/H200 (sm_90)": True, "sm_86/sm_89": False}
    assert "| 32 / 33824 / 225.0 | 32 / 33824 / 225.0 | - | **no** | yes | **no** |" in tool.markdown(rows)
    docs = tmp_path / "kernels.md"
    docs.write_text(f"intro\n{tool.DOCS_START}\nold\n{tool.DOCS_END}\noutro\n")
    tool.write_docs(str(docs), tool.markdown(rows), "header")
    text = docs.read_text()
    assert "old" not in text and text.startswith("intro\n") and text.endswith("outro\n") and "header" in text

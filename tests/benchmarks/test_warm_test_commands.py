"""benchmarks/warm_test_commands.py runs both sides of its comparison and prints the ratio."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "warm_test_commands.py"


@pytest.mark.slow  # a fresh lm_eval run and a warm server: about 20 s of CPU
def test_the_benchmark_times_fresh_and_warm_runs():
    proc = subprocess.run([sys.executable, str(SCRIPT), "--runs", "1"], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for side in ("fresh", "warm"):
        assert re.search(rf"{side}: 1 runs, +[0-9.]+ s of CPU", proc.stdout), proc.stdout
    assert re.search(r"CPU time, fresh / warm \(server start included\): [0-9.]+x", proc.stdout), proc.stdout

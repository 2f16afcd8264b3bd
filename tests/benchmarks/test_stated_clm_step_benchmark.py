"""`method_scoring.py --stated-step` (benchmarks/stated_clm_step.py) on the tiny CPU model: it reports
vanilla, stated-CLM's chunk runner and its static-shape step with time ratios, ops, host reads and
the step's graph breaks, and the counts say what the step is for."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "method_scoring.py"


@pytest.mark.slow  # about 30 s: three models loaded, a dynamo trace
def test_stated_step_rows_compare_the_step_with_the_chunk_runner(tmp_path):
    out = tmp_path / "stated.json"
    command = ["--tiny", "--device", "cpu", "--methods", "vanilla", "--skip-fox", "--lengths", "256", "--stated-step"]
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *command, "--out-json", str(out)], capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {row["path"]: row for row in json.loads(out.read_text())["stated_clm_step"]}
    assert list(rows) == ["vanilla", "statedclm chunk runner", "statedclm step (eager)"]
    vanilla, runner, step = rows.values()
    assert vanilla["time_ratio"] == 1.0 and runner["time_ratio"] > 0 and step["time_ratio"] > 0
    assert step["graph_breaks"] == 0
    assert step["ops"] < runner["ops"]  # the merge of every layer at once
    assert step["host_reads"] == runner["host_reads"], rows  # the scored chunks' totals only, none per chunk
    assert "stated-CLM steady-state step, T = 256" in proc.stdout

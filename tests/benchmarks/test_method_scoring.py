"""benchmarks/method_scoring.py (figure P11) runs on a GPU only now and then; its tiny CPU run
keeps every method's scoring path and the report it writes from rotting in between."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "method_scoring.py"
METHODS = (
    "vanilla",
    "pi",
    "yarn",
    "dynamic_ntk",
    "self_extend",
    "lm_infinite",
    "streamingllm",
    "statedclm",
    "longcache",
    "infini",
    "clex",
    "landmark",
)
FOX_ROWS = ("transformer(llama-mha)", "fox", "fox-transformer")


@pytest.mark.slow  # 18 s, a benchmark smoke run; every method's scoring: tests/methods/test_method_matrix.py
def test_tiny_cpu_run_scores_every_method_and_compares_it_to_vanilla(tmp_path):
    out = tmp_path / "p11.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--device", "cpu", "--out-json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["device"].startswith("cpu") and report["torch"] and report["model_config"]["hidden_size"] == 64
    rows = {(r["method"], r["T"]): r for r in report["rows"]}
    assert set(rows) == {(m, t) for m in METHODS + FOX_ROWS for t in (256, 512)}
    for row in rows.values():
        assert "error" not in row, row
        assert row["tokens_per_s"] > 0 and row["time_ratio"] > 0, row
        assert row["verdict"] in {"baseline", "reference", "ok", "SLOWER THAN TARGET"}, row
    for t in (256, 512):
        assert rows[("vanilla", t)]["time_ratio"] == 1.0
        assert rows[("transformer(llama-mha)", t)]["time_ratio"] == 1.0
        assert rows[("fox", t)]["target"] == 1.2
        assert rows[("clex", t)]["sibling"] == "yarn" and rows[("clex", t)]["ratio_to_sibling"] > 0
    lines = proc.stdout.rstrip().splitlines()  # the tables come last: a GPU run is read from its tail
    header = max(i for i, line in enumerate(lines) if "verdict" in line)
    assert [line.split()[0] for line in lines[header + 1 :]] == [m for m in FOX_ROWS for _ in (256, 512)]


@pytest.mark.slow  # 20 s: two tiny models scored by three paths at two lengths
def test_landmark_paths_report_ops_and_host_reads_beside_vanilla(tmp_path):
    out = tmp_path / "paths.json"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--tiny", "--device", "cpu", "--methods", "landmark", "--skip-fox"]
        + ["--landmark-paths", "--out-json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = {(r["path"], r["T"]): r for r in json.loads(out.read_text())["landmark_paths"]}
    assert set(rows) == {(p, t) for p in ("vanilla", "landmark", "landmark (window by window)") for t in (256, 512)}
    assert rows[("vanilla", 256)]["time_ratio"] == 1.0 and rows[("landmark", 512)]["time_ratio"] > 0
    assert rows[("landmark", 256)]["ops"] == rows[("landmark", 512)]["ops"]  # one pass per layer at any length
    assert rows[("landmark (window by window)", 512)]["ops"] > rows[("landmark (window by window)", 256)]["ops"]
    for t in (256, 512):  # no read inside the layers: the row's totals only, as vanilla's
        assert rows[("landmark", t)]["host_reads"] <= rows[("vanilla", t)]["host_reads"]

"""benchmarks/infini_memory.py --cli: the peak resident memory of whole `lm_eval` runs per method
and length, and the growth per 1,000 tokens as a ratio to vanilla's."""

import json

import pytest

from tests.helpers.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("infini_memory")


def test_each_method_gets_sizes_in_proportion_to_the_small_model_and_defaults_on_smollm2(bench):
    assert bench.cli_model_args("infini", "small", "/m") == "method=infini,pretrained=/m,segment_length=1024"
    assert bench.cli_model_args("statedclm", "small", "/m") == (
        "method=statedclm,pretrained=/m,max_context_length=1024,chunk_size=256,sink_length=32"
    )
    assert bench.cli_model_args("vanilla", "small", "/m") == "method=vanilla,pretrained=/m"
    assert bench.cli_model_args("longcache", "smollm2", None) == "method=longcache"
    assert bench.ratio(2.0, 4.0) == "0.50x" and bench.ratio(2.0, 0.001) == "-" and bench.ratio(1.0, None) == "-"


@pytest.mark.slow  # ~1 min: four real lm_eval runs; the fast tier covers the sizes and ratios above (the
# wait4 peak reader is exercised only here)
def test_quick_cli_run_measures_vanilla_and_infini_at_two_lengths(tmp_path):
    import subprocess
    import sys

    from tests.helpers.benchmark_scripts import BENCHMARKS

    out = tmp_path / "cli.json"
    proc = subprocess.run(
        [sys.executable, str(BENCHMARKS / "infini_memory.py"), "--cli", "--quick", "--cli-methods", "infini"]
        + ["--json", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(out.read_text())
    assert set(report["peaks_bytes"]) == {f"{m}@{n}" for m in ("vanilla", "infini") for n in (200, 800)}
    assert all(peak > 100 * 2**20 for peak in report["peaks_bytes"].values())  # a process with torch loaded
    assert set(report["growth_mib_per_1k"]) == {"vanilla@200-800", "infini@200-800"}
    assert "growth x vanilla's" in proc.stdout

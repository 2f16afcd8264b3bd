"""benchmarks/layer_major_scoring.py --tiny: both scorers of both methods, alternated, and what it reports."""

from tests.helpers.benchmark_scripts import load_benchmark


def test_tiny_run_reports_both_scorers_of_both_methods():
    rows = load_benchmark("layer_major_scoring").main(["--tiny", "--length", "160", "--repeats", "1"])
    assert [row["method"] for row in rows] == ["streamingllm", "longcache"]
    for row in rows:
        assert row["time_ratio"] > 0 and all(s > 0 for s in row["seconds"].values())
        assert row["ops"]["layer_major"] < row["ops"]["chunk_runner"]
        assert row["host_reads"]["layer_major"] == 2 and row["max_nll_gap"] <= 2e-5

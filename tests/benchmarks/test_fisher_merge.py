"""benchmarks/fisher_merge.py at its tiny size: the C merge timed against the ATen path on the same cache,
with the same output; a chunk larger than the pairs outside the sinks is one message."""

from __future__ import annotations

import json

import pytest

from lm_eval_longmem.models.bounded_cache import fisher_average_cpu
from tests.helpers.benchmark_scripts import load_benchmark


@pytest.mark.skipif(not fisher_average_cpu.LIBRARY.available(), reason="no C compiler builds it here")
def test_the_c_merge_is_timed_against_the_aten_path(tmp_path, capsys):
    out = tmp_path / "merge.json"
    row = load_benchmark("fisher_merge").main(["--tiny", "--out-json", str(out)])
    assert json.loads(out.read_text())["row"] == row
    assert row["aten_seconds"] > 0 and row["time_ratio"] == row["c_seconds"] / row["aten_seconds"]
    assert row["largest_difference"] < 1e-5
    assert "x the ATen time" in capsys.readouterr().out
    assert fisher_average_cpu.takes.__name__ == "takes"  # the benchmark put the dispatch back


def test_a_chunk_with_too_few_pairs_is_refused(capsys):
    with pytest.raises(SystemExit):
        load_benchmark("fisher_merge").main(["--budget", "64", "--sinks", "4", "--chunk", "60"])
    assert "--chunk 60: only 59 pairs lie outside the sinks" in capsys.readouterr().err

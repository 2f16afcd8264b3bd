"""benchmarks/bounded_cache_memory.py --tiny: every part of the script (forgetting curve, passkey,
decoding after a prefill) on a tiny random model in seconds, so the SmolLM2 run it stands for
does not rot between its rare runs; and the sizes given beside --tiny win over its own."""

import json

import pytest

from tests.helpers.benchmark_scripts import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("bounded_cache_memory")


def test_tiny_run_measures_every_method_in_every_part(bench, corpus_file, tmp_path):
    out = tmp_path / "bounded.json"
    report = bench.main(["--tiny", "--corpus", str(corpus_file), "--json", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert (report["budget"], report["chunk"], report["sink"]) == (64, 16, 4)
    methods = ("statedclm", "streamingllm", "longcache", "vanilla")
    assert set(report["forgetting_curve"]) == {f"{m}@{L}" for m in methods for L in (24, 64)}
    for cell in report["forgetting_curve"].values():
        assert 0.0 <= cell["copy_acc"] <= 1.0 and all(s > 0 for s in cell["seconds"])
    assert set(report["passkey"]) == {f"{m}@160@0.5" for m in methods}
    assert set(report["decode_ms_per_token"]) == {f"{m}@{C}" for m in methods for C in (80, 160)}
    assert all(v[0] > 0 for v in report["decode_ms_per_token"].values())


def test_sizes_given_beside_tiny_win_and_the_rest_follow_it(bench):
    args = bench.parse_args(["--tiny", "--budget", "32", "--decode-contexts", "40"])
    assert args.budget == 32 and args.decode_contexts == [40] and args.fc_lengths == [24, 64]
    default = bench.parse_args([])
    assert default.budget == 512 and default.decode_contexts == [2048, 16384] and default.corpus == "auto"

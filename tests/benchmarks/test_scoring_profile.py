"""benchmarks/scoring_profile.py tells a host-bound method from a GPU-bound one by counting what
one scoring call launches and how often it waits for the device; its counts must be the call's."""

import torch

from tests.helpers.benchmark_scripts import load_benchmark


class ThreeSyncScorer:
    """Stands in for a method's scorer: four matmuls and three `.item()` reads per call."""

    def _loglikelihood_tokens(self, requests, disable_tqdm=True):
        x = torch.ones(8, 8)
        for _ in range(4):
            x = x @ x / 8
        return [(sum(float(x[i, i].item()) for i in range(3)), True) for _ in requests]


def test_profile_counts_the_calls_host_syncs_and_ops(capsys):
    module = load_benchmark("scoring_profile")
    found = module.profile_scoring(ThreeSyncScorer(), (None, [1], [2]), "cpu")
    assert found["host_syncs"]["aten::_local_scalar_dense"] == 3
    assert found["host_syncs"]["cudaStreamSynchronize"] == 0
    assert ("aten::mm", 4) in [(name, count) for name, count, _ in found["top_host_ops"]]
    assert found["kernel_launches"] == 0 and found["gpu_busy_s"] == 0  # no GPU here
    assert found["wall_s"] > 0
    module.print_profile("three-syncs", 2, found)
    assert "aten::_local_scalar_dense 3" in capsys.readouterr().out

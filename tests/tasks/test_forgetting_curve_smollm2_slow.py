"""Slow tier: the paper's qualitative claim on a real model (SmolLM2-135M, the embedded default).

Inside its context a trained LM copies what it has seen: copy accuracy sits well above LM
accuracy at short lengths (the paper's fine/coarse-grained memory regions).
Run with: ./scripts/test.sh --slow
"""

import pytest

pytestmark = pytest.mark.slow


def test_copy_accuracy_well_above_lm_accuracy_on_smollm2():
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    results = lm_eval.simple_evaluate(
        model="longmem",
        model_args={"method": "vanilla", "device": "cpu"},
        tasks=["forgetting_curve"],
        metadata={"fc_corpus": "shakespeare", "fc_lengths": [64, 256, 1024], "fc_samples": 3},
    )
    curve = results["results"]["forgetting_curve"]["curve,none"]
    for point in curve["points"]:
        print(point)
        assert point["copy_mean"] > point["lm_mean"] + 0.3, point
        assert point["copy_mean"] > 0.8, point
    assert curve["coarse_memory_length"] == 1024

"""Slow tier: a bounded-memory method reads a forgetting-curve input longer than the
default model's whole context (SmolLM2-135M, 8192 tokens) with no `max_length=`.

L = 4200 gives copy and LM inputs of 2L + 1 = 8401 tokens. streamingllm runs with the budget of
the README's bounded-cache benchmark (Table 3's proportions at 512 entries: 32 sinks, chunks of
64), so attention never sees more than 576 positions. Cost: 131 chunks per sequence, two
sequences; measured 129 s for the whole test on 2 CPU cores (copy accuracy 0.403, LM accuracy
0.400: the copy source left the window long ago). Run with: ./scripts/test.sh --slow
"""

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(7200)]


def test_streamingllm_runs_a_forgetting_curve_length_past_8192_tokens_without_max_length():
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    results = lm_eval.simple_evaluate(
        model="longmem",
        model_args={
            "method": "streamingllm",
            "max_context_length": 512,
            "chunk_size": 64,
            "sink_length": 32,
            "device": "cpu",
        },
        tasks=["forgetting_curve"],
        metadata={"fc_corpus": "shakespeare", "fc_lengths": [4200], "fc_samples": 1},
    )
    config = results["config"]
    assert config["longmem_bounded_memory"] and config["longmem_context_length"] >= 1 << 20
    protocol = results["configs"]["forgetting_curve"]["metadata"]["protocol"]
    (plan,) = protocol["length_plan"]
    assert protocol["training_length"] == 8192 and plan["input_tokens"] == 8401 > protocol["training_length"]
    assert plan["beyond_training_length"] and plan["status"] == "planned"
    curve = results["results"]["forgetting_curve"]["curve,none"]
    (point,) = curve["points"]
    print(point)
    assert point["status"] == "ok" and point["num_samples"] == 1 and curve["failed_lengths"] == []
    assert 0.0 <= point["lm_mean"] <= 1.0 and 0.0 <= point["copy_mean"] <= 1.0

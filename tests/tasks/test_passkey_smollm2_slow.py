"""Slow tier: SmolLM2-135M (the embedded default) finds the pass key at short lengths, and
reusing a shared prompt prefix gives the same greedy answers as re-encoding it.

Run with: ./scripts/test.sh --slow
"""

import pytest

pytestmark = pytest.mark.slow


def test_smollm2_passkey_accuracy_is_high_at_short_lengths():
    import lm_eval

    import lm_eval_longmem

    lm_eval_longmem.register()
    results = lm_eval.simple_evaluate(
        model="longmem",
        model_args={"method": "vanilla", "device": "cpu"},
        tasks=["longmem_passkey"],
        metadata={"pk_lengths": [512, 1024, 2048], "pk_depths": [0, 50, 100], "pk_samples": 3},
    )
    metrics = results["results"]["longmem_passkey"]
    grid = metrics["grid,none"]
    print("depth \\ length", grid["lengths"])
    for depth, row in zip(grid["depths"], grid["accuracy"]):
        print(f"{depth:>5}%", row)
    assert metrics["acc,none"] >= 0.8
    assert all(metrics[f"acc@len{L:04d},none"] >= 0.6 for L in grid["lengths"])


def test_smollm2_prefix_reuse_gives_the_same_answers():
    from lm_eval.api.instance import Instance

    from lm_eval_longmem.lm_eval_model.longmem import LongMemLM

    lm = LongMemLM(device="cpu")
    shots = "".join(f"Question: What is item {i} ?\nType: {'Number' if i % 3 else 'Definition'}\n" for i in range(60))
    prompts = [
        f"Please determine the type of the question below.\n\n{shots}Question: {q}\nType:"
        for q in ("How many legs has a spider ?", "What is a comet ?", "Who wrote Hamlet ?", "How far is Mars ?")
    ]
    requests = [
        Instance("generate_until", {}, (p, {"until": ["\n"], "max_gen_toks": 6, "do_sample": False}), i)
        for i, p in enumerate(prompts)
    ]
    reused = lm.generate_until(requests)
    lm.reuse_prefix = False
    assert lm.generate_until(requests) == reused

"""The plan and time estimate printed before a run (lm_eval_model/cost_plan.py)."""

import pytest

from lm_eval_longmem.lm_eval_model.cost_plan import (
    PROBE_REPEATS,
    CostPlan,
    Estimate,
    announce,
    estimate_seconds,
    fit_cost,
    human_duration,
    human_range,
    probe_lengths,
    shrink_hint,
)


def test_two_timed_passes_recover_a_linear_plus_quadratic_cost():
    cost = fit_cost([(256, 2e-3 * 256 + 1e-6 * 256**2), (1024, 2e-3 * 1024 + 1e-6 * 1024**2)])
    assert cost(4096) == pytest.approx(2e-3 * 4096 + 1e-6 * 4096**2)
    flat = fit_cost([(100, 1.0)])  # one pass: linear
    assert flat(300) == pytest.approx(3.0)
    noisy = fit_cost([(256, 1.0), (1024, 3.0)])  # per token cheaper when longer: no negative b
    assert noisy(2048) == pytest.approx(2048 / 256 * 1.0)


def test_estimate_sums_the_fitted_cost_over_every_input_after_a_warm_up():
    calls = []

    def time_one(length):
        calls.append(length)
        return 1e-3 * length + 1e-6 * length**2

    lengths = [129, 1025, 4097, 16385]
    expected = sum(1e-3 * n + 1e-6 * n * n for n in lengths)
    estimate = estimate_seconds(lengths, time_one, max(lengths))
    assert estimate.seconds == estimate.low == estimate.high == pytest.approx(expected)  # steady: no width
    assert calls == [1024] + [1024] * PROBE_REPEATS + [4096] * PROBE_REPEATS  # warm-up, then the timed passes
    calls.clear()
    estimate_seconds([100, 200], time_one, 200)  # a short run probes at its own longest input
    assert calls == [50] + [50] * PROBE_REPEATS + [200] * PROBE_REPEATS


def test_one_slow_pass_per_probe_widens_the_range_but_does_not_move_the_median_fit():
    """What one timing per probe got wrong: a stall (here +30%) in a pass went straight into the fit."""
    stalls = iter([False, True, False, False, False, False, True])  # warm-up, 3 x 1,024, 3 x 4,096

    def time_one(length):
        return (1e-3 * length + 1e-6 * length**2) * (1.3 if next(stalls) else 1.0)

    lengths = [4097, 16385]
    steady = sum(1e-3 * n + 1e-6 * n * n for n in lengths)
    estimate = estimate_seconds(lengths, time_one, max(lengths))
    assert estimate.seconds == pytest.approx(steady)
    assert estimate.low == pytest.approx(steady) and estimate.high == pytest.approx(1.3 * steady)


def test_the_range_is_said_in_one_unit_and_collapses_when_its_ends_agree():
    assert human_range(Estimate(44 * 60, 40 * 60, 47 * 60)) == "40-47 min (median 44 min)"
    assert human_range(Estimate(6.0 * 3600, 5.2 * 3600, 6.8 * 3600)) == "5.2-6.8 h (median 6.0 h)"
    assert human_range(Estimate(80 * 60, 70 * 60, 100 * 60)) == "1.2-1.7 h (median 80 min)"
    assert human_range(Estimate(5.1, 5.05, 5.2)) == "6 s"


def test_the_longer_probe_is_the_longest_input_up_to_a_cap_and_the_shorter_a_quarter_of_it():
    assert probe_lengths(16385) == [1024, 4096]
    assert probe_lengths(3000) == [750, 3000]
    assert probe_lengths(3) == [1, 3] and probe_lengths(1) == [1]


def test_probes_far_below_the_longest_input_miss_a_cost_that_grows_faster_than_the_fit():
    """Why the probes are long: on a CPU the per-token cost at 16k grows faster than a fit from
    short inputs says (measured: 0.34 s at 256, 1.45 s at 1,024, 8.18 s at 4,096, 74.4 s at 16,384
    tokens for SmolLM2-135M on 2 cores); the fit through 1,024 and 4,096 lands within 5%, the
    one through 256 and 1,024 a third short."""
    measured = {256: 0.34, 1024: 1.45, 4096: 8.18, 16384: 74.39}
    near = fit_cost([(1024, measured[1024]), (4096, measured[4096])])(16384)
    far = fit_cost([(256, measured[256]), (1024, measured[1024])])(16384)
    assert abs(near / measured[16384] - 1) < 0.05 and far / measured[16384] < 0.7


def test_hint_names_the_options_of_the_tasks_that_shrink_them():
    hint = shrink_hint(["forgetting_curve", "longmem_passkey", "some_builtin_task"])
    assert "--limit N" in hint and "fc_lengths" in hint and "fc_samples" in hint
    assert "pk_lengths" in hint and "pk_samples" in hint and "some_builtin_task" not in hint


def test_small_runs_get_the_plan_without_timing_and_big_ones_the_estimate(monkeypatch):
    lines = []
    small = CostPlan("scoring", (129, 129, 257), ("forgetting_curve",))
    assert announce(small, lambda n: 1.0, "cpu", lines.append) is None
    assert lines == [
        "longmem: 3 scoring requests for forgetting_curve; input lengths (tokens): 129 x2, 257 x1; 515 tokens in all."
    ]
    generation = CostPlan("generation", (263, 263), ("longmem_passkey",))  # 253-token prompts, 10 to generate
    announce(generation, lambda n: 1.0, "cpu", lines.append)
    assert lines[-1] == (
        "longmem: 2 generation requests for longmem_passkey; prompt + max_gen_toks lengths (tokens): 263 x2; "
        "526 tokens in all."
    )
    monkeypatch.setenv("LM_EVAL_LONGMEM_ESTIMATE_ABOVE", "0")
    lines.clear()
    assert announce(small, lambda n: n / 100, "cpu", lines.append).seconds == pytest.approx(5.15)
    assert lines[1].startswith("longmem: estimated 6 s on this machine (cpu") and "fc_lengths" in lines[1]
    assert f"inputs of 64 and 257 tokens timed {PROBE_REPEATS} times each" in lines[1]
    assert human_duration(5400) == "1.5 h" and human_duration(600) == "10 min"


def test_the_plan_and_the_estimate_through_the_real_cli(tiny_model_dir, corpus_file):
    from tests.helpers.cli_runs import BIN, run, small_protocol

    proc = run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir}",
            "--tasks",
            "forgetting_curve",
            *small_protocol(corpus_file),
        ],
        env_extra={"LM_EVAL_LONGMEM_ESTIMATE_ABOVE": "0"},
    )
    plan = [line for line in proc.stderr.splitlines() if line.startswith("longmem: ")]
    assert len(plan) == 2, proc.stderr[-3000:]
    assert "scoring requests for forgetting_curve; input lengths (tokens):" in plan[0]
    assert plan[1].startswith("longmem: estimated ") and "on this machine (cpu, " in plan[1]
    assert "--limit N" in plan[1] and "fc_lengths" in plan[1]
    assert "no CUDA GPU" not in proc.stderr  # no --device typed: the CPU, silently

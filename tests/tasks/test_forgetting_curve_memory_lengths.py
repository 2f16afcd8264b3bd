"""Fine/coarse memory lengths and the curve, against the paper's definitions."""

import json

import pytest

from lm_eval_longmem.tasks.forgetting_curve import metrics


def records(table):
    """[(L, [copy accs], [lm accs])] -> per-sample records."""
    out = []
    for length, copies, lms in table:
        out.extend({"length": length, "copy": copy_acc, "lm": lm_acc} for copy_acc, lm_acc in zip(copies, lms))
    return out


TABLE = [
    (8, [0.9, 1.0], [0.3, 0.3]),  # short: not yet copying perfectly (paper, footnote 7)
    (64, [1.0, 1.0], [0.3, 0.4]),  # copy > 99%  -> fine
    (128, [1.0, 0.99], [0.3, 0.3]),  # mean 0.995 > 0.99 -> fine
    (256, [0.6, 0.5], [0.3, 0.3]),  # copy - lm = 0.25 > 1% -> coarse
    (512, [0.305, 0.305], [0.3, 0.3]),  # gap 0.005 < 1% -> amnesia
]


def test_summary_mean_and_population_std():
    (first, *_) = metrics.summarize(records(TABLE))
    assert first.length == 8 and first.num_samples == 2
    assert first.copy_mean == pytest.approx(0.95)
    assert first.copy_std == pytest.approx(0.05)  # np.std, ddof=0
    assert first.lm_std == 0.0


def test_fine_and_coarse_lengths():
    summaries = metrics.summarize(records(TABLE))
    assert metrics.fine_memory_length(summaries) == 128
    assert metrics.coarse_memory_length(summaries) == 256


def test_largest_qualifying_length_not_first_failure():
    table = [(8, [1.0], [0.3]), (16, [0.9], [0.3]), (32, [1.0], [0.3]), (64, [0.3], [0.3])]
    summaries = metrics.summarize(records(table))
    assert metrics.fine_memory_length(summaries) == 32
    assert metrics.coarse_memory_length(summaries) == 32


def test_thresholds_are_strict():
    table = [(8, [0.99], [0.97]), (16, [0.5], [0.495])]
    summaries = metrics.summarize(records(table))
    assert metrics.fine_memory_length(summaries) == 0  # needs > 99%, not >=
    assert metrics.coarse_memory_length(summaries) == 8  # 0.99 - 0.97 = 0.02 > 0.01; at 16 the gap is 0.005


def test_no_memory_gives_zero():
    summaries = metrics.summarize(records([(8, [0.3], [0.3]), (16, [0.2], [0.3])]))
    assert metrics.fine_memory_length(summaries) == 0
    assert metrics.coarse_memory_length(summaries) == 0


def test_curve_has_every_point_and_lower_bound_flags():
    curve = metrics.curve(records(TABLE))
    assert curve["mode"] == "accuracy"
    assert [p["length"] for p in curve["points"]] == [8, 64, 128, 256, 512]
    assert curve["fine_memory_length"] == 128 and curve["coarse_memory_length"] == 256
    assert not curve["fine_is_lower_bound"] and not curve["coarse_is_lower_bound"]
    capped = metrics.curve(records(TABLE[:3]))
    assert capped["coarse_is_lower_bound"] and capped["fine_is_lower_bound"]  # "> 128" in the paper's notation


def test_reduced_curve_for_models_without_token_predictions():
    recs = [
        {"length": 8, "copy_exact": 1.0, "lm_exact": 0.0, "copy_nll": 0.1, "lm_nll": 3.0},
        {"length": 8, "copy_exact": 0.0, "lm_exact": 0.0, "copy_nll": 0.3, "lm_nll": 2.0},
    ]
    curve = metrics.curve(recs)
    assert curve["mode"] == "reduced" and curve["fine_memory_length"] is None
    assert curve["points"][0]["copy_exact"] == 0.5 and curve["points"][0]["lm_nll"] == 2.5


def test_curve_is_full_in_json_but_one_cell_in_lm_evals_table():
    from lm_eval.utils import make_table

    curve = metrics.curve(records(TABLE))
    assert json.loads(json.dumps(curve))["points"][4]["length"] == 512
    assert curve["points"][0]["length"] == 8 and dict(curve.items())["fine_memory_length"] == 128
    table = make_table(
        {"results": {"forgetting_curve": {"curve,none": curve, "curve_stderr,none": "N/A"}}, "versions": {}}
    )
    assert "5 points (accuracy), fine 128, coarse 256;" in table and "copy_mean" not in table
    # the table's plain memory-length numbers cannot say ">", the curve's cell does
    assert "fine >128, coarse >128" in metrics.curve(records(TABLE[:3])).summary()

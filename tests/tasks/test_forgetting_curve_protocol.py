"""Forgetting-curve options, length grids and the hard-limit guard."""

import numpy as np
import pytest

from lm_eval_longmem.tasks.forgetting_curve.protocol import (
    ForgettingCurveConfigError,
    ModelLengths,
    Options,
    length_grid,
    max_fitting_length,
    plan_lengths,
)


def lengths_for(options, context_length, hard_input_limit=None):
    """Runnable lengths for a model whose training = context = claimed length."""
    model = ModelLengths(context_length, context_length, context_length, hard_input_limit)
    return [p.length for p in plan_lengths(options, model) if p.runs]


def test_defaults_are_the_papers_protocol():
    options = Options.from_metadata({"pretrained": "x", "method": "vanilla"})  # non-fc keys are ignored
    assert (options.points, options.samples, options.granularity, options.min_length) == (32, 10, "linear", 8)
    assert options.max_length is None and options.corpus == "auto"


def test_options_parse_cli_values():
    options = Options.from_metadata(
        {"fc_max_length": "512", "fc_points": 4, "fc_granularity": "log", "fc_lengths": "[64,128]"}
    )
    assert options.max_length == 512 and options.points == 4 and options.lengths == (64, 128)
    assert Options.from_metadata({"fc_lengths": [128, 64, 64]}).lengths == (64, 128)


def test_unknown_option_lists_the_valid_ones():
    with pytest.raises(ForgettingCurveConfigError, match="fc_max_lenght.*valid: .*fc_max_length"):
        Options.from_metadata({"fc_max_lenght": 10})


@pytest.mark.parametrize(
    "bad", [{"fc_points": 2.5}, {"fc_granularity": "cubic"}, {"fc_samples": 0}, {"fc_points": "many"}]
)
def test_malformed_options_are_rejected(bad):
    with pytest.raises(ForgettingCurveConfigError):
        Options.from_metadata(bad)


def test_linear_grid_matches_the_reference_spacing():
    assert length_grid(8, 20000, 32, "linear") == sorted(set(np.linspace(8, 20000, num=32, dtype=int).tolist()))


def test_log_grid_matches_the_reference_spacing():
    expected = np.unique(np.geomspace(8, 4094, num=10, dtype=int)).tolist()
    assert length_grid(8, 4094, 10, "log") == sorted(set(expected) | {4094})


def test_default_lengths_reach_the_claimed_length_or_the_longest_that_fits_a_hard_limit():
    assert max_fitting_length(8192) == 4095  # 2L + 1 = 8191 input tokens
    lengths = lengths_for(Options(), 8192)  # relative positions: up to l, inputs 2l + 1 (the paper)
    assert len(lengths) == 32 and lengths[0] == 8 and lengths[-1] == 8192
    lengths = lengths_for(Options(), 8192, hard_input_limit=8192)  # learned absolute positions
    assert len(lengths) == 32 and lengths[0] == 8 and lengths[-1] == 4095


def test_lengths_past_a_hard_limit_are_kept_as_model_limit_and_none_runnable_is_an_error():
    with pytest.raises(ForgettingCurveConfigError, match=r"longest length that fits is 63.*Nothing is truncated"):
        lengths_for(Options(lengths=(64, 100)), 128, hard_input_limit=128)
    plans = plan_lengths(Options(lengths=(8, 64)), ModelLengths(128, 128, 128, 128))
    assert [(p.length, p.status) for p in plans] == [(8, "planned"), (64, "model_limit")]
    assert lengths_for(Options(lengths=(8, 63)), 128, hard_input_limit=128) == [8, 63]
    assert lengths_for(Options(max_length=100), 128)[-1] == 100  # relative positions: runs past 128

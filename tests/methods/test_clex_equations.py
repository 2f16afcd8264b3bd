"""CLEX held against its equations on small hand-checked cases (Chen et al., ICLR 2024; the
authors' `clex_layer.py`): the solver, the vector field, t from the length, and its limit."""

from __future__ import annotations

import math

import pytest
import torch

from lm_eval_longmem.models.clex.frequency_field import ClexFrequencyField
from lm_eval_longmem.models.clex.ode_solver import solve, step_grid
from lm_eval_longmem.models.clex.scaling import ClexScaling, FactorLimitError


def base_inv_freq(d: int, theta: float = 10000.0) -> torch.Tensor:
    return 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)


def ntk_inv_freq(d: int, alpha: float, theta: float = 10000.0) -> torch.Tensor:
    """NTK-aware scaling with factor alpha: base theta * alpha^(d/(d-2))."""
    return 1.0 / (theta * alpha ** (d / (d - 2))) ** (torch.arange(0, d, 2, dtype=torch.float64) / d)


def rk4_three_eighths_float64(field, y0, grid):
    """An independent transcription of the 3/8 rule (Kutta 1901) in float64, step by step."""
    y = y0.double()
    for t0, t1 in zip(grid[:-1].tolist(), grid[1:].tolist(), strict=True):
        h = t1 - t0
        k1 = field(t0, y)
        k2 = field(t0 + h / 3, y + h * k1 / 3)
        k3 = field(t0 + 2 * h / 3, y + h * (-k1 / 3 + k2))
        k4 = field(t1, y + h * (k1 - k2 + k3))
        y = y + h * (k1 + 3 * k2 + 3 * k3 + k4) / 8
    return y


def test_the_grid_is_torchdiffeqs_with_its_short_last_step():
    # float32: (16 - 1) / 0.01 + 1 rounds up past 1501, so the grid has 1502 points and ends with a step
    # of about 3e-7 onto 16 (torchdiffeq's grid, which the released frequencies were solved on)
    grid = step_grid(torch.tensor([1.0, 16.0]), 0.01)
    assert grid[0] == 1.0 and grid[-1] == 16.0
    assert len(grid) == math.ceil(float(torch.tensor(15.0) / 0.01 + 1))
    assert bool((grid[1:] > grid[:-1]).all())


def test_solver_matches_an_independent_rk4_and_the_exact_solution():
    # dy/dt = -t y, y(1) = 1  =>  y(t) = exp((1 - t^2) / 2)
    def field(t, y):
        return -t * y

    grid = step_grid(torch.tensor([1.0, 3.0], dtype=torch.float64), 0.05)
    ours = solve(field, torch.ones(1, dtype=torch.float64), torch.tensor([1.0, 3.0], dtype=torch.float64), 0.05)[-1]
    independent = rk4_three_eighths_float64(lambda t, y: -t * y, torch.ones(1), grid)
    assert ours.item() == pytest.approx(independent.item(), rel=1e-12)
    assert ours.item() == pytest.approx(math.exp((1 - 9) / 2), rel=2e-5)  # fourth order: error ~ h^4


def test_solver_interpolates_requested_times_between_grid_points_linearly():
    def field(t, y):
        return torch.ones_like(y) * 2 * t  # y = t^2: a quadratic, solved exactly by RK4 at the grid points

    times = torch.tensor([0.0, 0.25, 1.0], dtype=torch.float64)
    values = solve(field, torch.zeros(1, dtype=torch.float64), times, 0.5)
    assert values[1].item() == pytest.approx(0.5 * 0.25, abs=1e-12)  # halfway along the chord of (0,0)-(0.5,0.25)
    assert values[2].item() == pytest.approx(1.0, abs=1e-12)


def test_solver_equals_torchdiffeq_rk4_on_the_clex_field():
    torchdiffeq = pytest.importorskip("torchdiffeq")
    torch.manual_seed(0)
    field = ClexFrequencyField(16, 2, "tanh")
    torch.nn.init.normal_(field.ode_down_proj, std=0.1)
    y0 = torch.log(base_inv_freq(16))
    times = torch.arange(1.0, 6.0)
    with torch.no_grad():
        ours = solve(field, y0, times, 0.05)
        theirs = torchdiffeq.odeint(field, y0, times, method="rk4", options={"step_size": 0.05})
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)


@pytest.mark.parametrize("t", [1, 2, 3, 5])
def test_an_untrained_ode_is_ntk_with_factor_two_t_minus_one(t):
    d = 16
    clex = ClexScaling(base_inv_freq(d, 5e5), original_length=8, max_factor=6, param_factor=1, act="silu", time_dt=0.01)
    assert clex.proj_func.untrained()
    expected = ntk_inv_freq(d, 2 * t - 1, theta=5e5).float()  # any rope_theta: the hard-wired 10000 cancels
    torch.testing.assert_close(clex.frequencies(t), expected, rtol=1e-5, atol=0)


def test_the_field_is_the_papers_formula_at_a_hand_checked_point():
    d = 4  # j = 0, 1
    field = ClexFrequencyField(d, 1, "tanh")
    with torch.no_grad():
        field.ode_up_proj.copy_(torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]]))
        field.ode_down_proj.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.0, 0.0]]))
    z = torch.tensor([0.5, -1.0])
    t = torch.tensor(2.0)  # 2t - 1 = 3
    xi = torch.tensor([0.0, -(2 / 4) * math.log(10000) - (2 / 2) * math.log(3)])
    xi_rate = torch.tensor([0.0, -4 * 1 / (2 * 3)])
    expected = torch.tanh(z + xi) + xi_rate  # U, D pick the identity on the first two hidden units
    torch.testing.assert_close(field(t, z), expected)


def test_weights_changed_in_place_recompute_the_cached_table():
    clex = ClexScaling(base_inv_freq(8), original_length=8, max_factor=3, param_factor=1, act="silu", time_dt=0.1)
    before = clex.frequencies(3).clone()
    assert clex.frequencies(3) is clex.frequencies(3) or torch.equal(clex.frequencies(3), before)  # cached
    with torch.no_grad():
        clex.proj_func.ode_down_proj.add_(0.5)
    assert not torch.allclose(clex.frequencies(3), before)


@pytest.mark.parametrize(("length", "factor"), [(7, 1), (8, 1), (9, 2), (16, 2), (17, 3), (32, 4)])
def test_t_is_the_ceiling_of_the_length_over_c(length, factor):
    clex = ClexScaling(base_inv_freq(8), original_length=8, max_factor=4, param_factor=1, act="silu", time_dt=0.1)
    assert clex.factor_for_length(length) == factor


def test_past_c_times_max_factor_one_error_names_the_limit():
    clex = ClexScaling(base_inv_freq(8), original_length=8, max_factor=4, param_factor=1, act="silu", time_dt=0.1)
    with pytest.raises(FactorLimitError, match=r"8 x 4 = 32 tokens"):
        clex.factor_for_length(33)


def test_training_frequencies_carry_gradients_to_the_ode_only_past_t_one():
    clex = ClexScaling(base_inv_freq(8), original_length=8, max_factor=4, param_factor=1, act="silu", time_dt=0.25)
    clex.training_frequencies(3).sum().backward()
    assert clex.proj_func.ode_down_proj.grad is not None and clex.proj_func.ode_down_proj.grad.abs().sum() > 0
    assert clex.training_frequencies(1).grad_fn is None
    with torch.no_grad():
        torch.testing.assert_close(clex.training_frequencies(3), clex.frequencies(3), rtol=1e-6, atol=0)

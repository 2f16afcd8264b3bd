"""A fixed-grid Runge-Kutta solver: RK4 in its 3/8-rule form, on the grid torchdiffeq builds.

CLEX solves its frequency ODE with torchdiffeq's `odeint(method="rk4", options={"step_size": h})`.
To give the same numbers without the dependency, this follows that solver's conventions: the grid
is start + k*h for k = 0..ceil((end - start)/h + 1) - 1 with the last point moved onto `end`
(computed in the times' dtype, so a float32 grid can end with one very short step), each step is
the 3/8 rule, and a requested time between two grid points is interpolated linearly.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

VectorField = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def step_grid(times: torch.Tensor, step_size: float) -> torch.Tensor:
    """The grid from times[0] to times[-1] in steps of `step_size`, its last point exactly times[-1]."""
    start, end = times[0], times[-1]
    count = int(torch.ceil((end - start) / step_size + 1).item())
    grid = torch.arange(0, count, dtype=times.dtype, device=times.device) * step_size + start
    grid[-1] = end
    return grid


def three_eighths_step(field: VectorField, t0, dt, t1, y0: torch.Tensor) -> torch.Tensor:
    """The increment y(t1) - y(t0) of one 3/8-rule Runge-Kutta step."""
    k1 = field(t0, y0)
    k2 = field(t0 + dt * (1 / 3), y0 + dt * k1 * (1 / 3))
    k3 = field(t0 + dt * (2 / 3), y0 + dt * (k2 - k1 * (1 / 3)))
    k4 = field(t1, y0 + dt * (k1 - k2 + k3))
    return (k1 + 3 * (k2 + k3) + k4) * dt * 0.125


def solve(field: VectorField, y0: torch.Tensor, times: torch.Tensor, step_size: float) -> torch.Tensor:
    """y at each of `times` (increasing; times[0] is y0's), shape (len(times), *y0.shape).

    Differentiable by ordinary backpropagation through the steps (no adjoint), as CLEX trains."""
    if times.ndim != 1 or len(times) < 1:
        raise ValueError(f"times must be a 1-D tensor of at least one time, got shape {tuple(times.shape)}")
    if len(times) > 1 and not bool((times[1:] > times[:-1]).all()):
        raise ValueError(f"times must be strictly increasing, got {times.tolist()}")
    if step_size <= 0:
        raise ValueError(f"step_size must be positive, got {step_size}")
    values = [y0]
    if len(times) == 1:
        return y0[None]
    grid = step_grid(times, step_size)
    wanted = 1
    y = y0
    for t0, t1 in zip(grid[:-1], grid[1:], strict=True):
        y_next = y + three_eighths_step(field, t0, t1 - t0, t1, y)
        while wanted < len(times) and t1 >= times[wanted]:
            values.append(_between(t0, t1, y, y_next, times[wanted]))
            wanted += 1
        y = y_next
    return torch.stack(values)


def _between(t0, t1, y0, y1, t):
    """y at t, linear between (t0, y0) and (t1, y1); the end points exactly."""
    if t == t0:
        return y0
    if t == t1:
        return y1
    return y0 + (t - t0) / (t1 - t0) * (y1 - y0)

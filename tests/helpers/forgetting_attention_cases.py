"""Random inputs and gradient comparison shared by the forgetting-attention test modules."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Case:
    """One attention shape: q [B, Tq, HQ, D] against k, v [B, T, H, D]."""

    name: str
    batch: int = 1
    length: int = 40
    q_heads: int = 2
    kv_heads: int = 2
    head_dim: int = 16
    num_queries: int | None = None
    seq_start: tuple[int, ...] | None = None
    cu_seqlens: tuple[int, ...] | None = None

    def extras(self) -> dict:
        return {
            "seq_start": None if self.seq_start is None else torch.tensor(self.seq_start),
            "cu_seqlens": None if self.cu_seqlens is None else torch.tensor(self.cu_seqlens),
        }


# FoX's gate gradient is a reverse cumulative sum over time, so rounding in the backward adds up
# along the sequence: this case is long enough to show it (used by the blocked and CUDA tests).
LONG_FORGET_GATE_CASE = Case("fox", batch=2, length=700, q_heads=4, kv_heads=4, head_dim=64)
BF16_TOLERANCE = (6e-2, 5e-2)  # (atol, rtol) of bf16 inputs against the fp32 reference


def make_inputs(case: Case, dtype=torch.float32, seed: int = 0) -> dict:
    """q, k, v, FoX log gates and generic biases, all requiring grad."""
    gen = torch.Generator().manual_seed(seed)
    tq = case.num_queries or case.length

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen) * scale).to(dtype).requires_grad_()

    log_fgate = torch.nn.functional.logsigmoid(torch.randn(case.batch, case.length, case.q_heads, generator=gen) + 2.0)
    k_bias = torch.randn(case.batch, case.length, case.q_heads, generator=gen).cumsum(1) * 0.3
    return {
        "q": rand(case.batch, tq, case.q_heads, case.head_dim),
        "k": rand(case.batch, case.length, case.kv_heads, case.head_dim),
        "v": rand(case.batch, case.length, case.kv_heads, case.head_dim),
        "log_fgate": log_fgate.requires_grad_(),
        "q_bias": (
            k_bias[:, case.length - tq :] + torch.randn(case.batch, tq, case.q_heads, generator=gen)
        ).requires_grad_(),
        "k_bias": k_bias.requires_grad_(),
    }


def output_and_grads(out: torch.Tensor, wrt: list[torch.Tensor]) -> list[torch.Tensor]:
    """The output followed by the gradients of a fixed non-uniform loss, all in fp32."""
    weights = torch.linspace(-1.0, 1.0, out.numel(), device=out.device).reshape(out.shape)
    grads = torch.autograd.grad((out.float() * weights).sum(), wrt, allow_unused=True)
    return [out.float()] + [
        torch.zeros_like(w, dtype=torch.float32) if g is None else g.float() for g, w in zip(grads, wrt)
    ]


def assert_all_close(
    got: list[torch.Tensor], want: list[torch.Tensor], names: list[str], atol: float, rtol: float = 1e-3
):
    for name, a, b in zip(names, got, want):
        assert torch.isfinite(a).all(), f"{name}: non-finite values"
        torch.testing.assert_close(a, b, atol=atol, rtol=rtol, msg=lambda m, name=name: f"{name}: {m}")


def strongly_forgetting_inputs(length: int, heads: int = 1, head_dim: int = 16, seed: int = 0):
    """fp32 q, k, v ``[1, T, H, D]`` and FoX's cumulative log-gates c ``[1, T, H]`` with mean
    log f near -2.2, so that |c| grows to about 2.2 T: the regime where rounding at |c| shows."""
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, length, heads, head_dim, generator=gen) for _ in range(3))
    c = torch.nn.functional.logsigmoid(torch.randn(1, length, heads, generator=gen) - 2.0).cumsum(1)
    return q, k, v, c


def float64_biased_attention(q, k, v, q_bias, k_bias) -> torch.Tensor:
    """Causal biased attention (Tq == Tk, no grouping) of the given inputs evaluated in float64."""
    q, k, v, q_bias, k_bias = (t.double() for t in (q, k, v, q_bias, k_bias))
    scores = torch.einsum("bihd,bjhd->bhij", q, k) / q.shape[-1] ** 0.5
    scores = scores + q_bias.transpose(1, 2)[..., :, None] - k_bias.transpose(1, 2)[..., None, :]
    causal = torch.ones(q.shape[1], q.shape[1], dtype=torch.bool, device=q.device).tril()
    probs = torch.softmax(scores.masked_fill(~causal, float("-inf")), dim=-1)
    return torch.einsum("bhij,bjhd->bihd", probs, v)

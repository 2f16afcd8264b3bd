"""S2-Attn (LongLoRA) against a per-pair reference: which keys each query of each head sees."""

import torch

from lm_eval_longmem_training.modeling.s2_attention import s2_attention


def reference(query, key, value, group):
    """Per head: unshifted heads see their own group's earlier tokens; shifted heads the same
    over the sequence rolled by -group/2 (so their groups straddle the others' boundaries)."""
    heads, length = query.shape[1], query.shape[2]
    out = torch.empty_like(query)
    for h in range(heads):
        shift = group // 2 if h >= heads // 2 else 0
        q, k, v = (t[:, h].roll(-shift, dims=1) for t in (query, key, value))
        pos = torch.arange(length)
        allowed = (pos[None, :] <= pos[:, None]) & (pos[None, :] // group == pos[:, None] // group)
        scores = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(-1)
        out[:, h] = (weights @ v).roll(shift, dims=1)
    return out


def test_s2_attention_matches_the_reference_and_full_length_groups_are_causal_attention():
    torch.manual_seed(0)
    query, key, value = (torch.randn(2, 4, 16, 8) for _ in range(3))
    assert torch.allclose(
        s2_attention(query, key, value, group=4, scaling=None), reference(query, key, value, 4), atol=1e-5
    )
    full = torch.nn.functional.scaled_dot_product_attention(query, key, value, is_causal=True)
    assert torch.allclose(s2_attention(query, key, value, group=16, scaling=None), full, atol=1e-6)

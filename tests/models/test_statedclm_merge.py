"""Stated-CLM's equations on hand-made tensors: the merge (eq. 13-14), counts (eq. 15-17),
pair selection (eq. 18-19, sinks)."""

import math

import pytest
import torch

from lm_eval_longmem.models.bounded_cache.attention import count_weighted_attention
from lm_eval_longmem.models.bounded_cache.layer_cache import LayerCache
from lm_eval_longmem.models.bounded_cache.merging import (
    fisher_merge,
    merge_groups,
    pair_scores,
    select_pairs,
)


def cache_of(keys, values=None, counts=None):
    keys = torch.tensor(keys, dtype=torch.float32)[None]  # one KV head
    values = keys.clone() if values is None else torch.tensor(values, dtype=torch.float32)[None]
    counts = torch.ones(keys.shape[1]) if counts is None else torch.tensor(counts, dtype=torch.float32)
    return LayerCache(keys, values, counts)


def test_merge_is_a_fisher_weighted_average_per_element():
    cache = cache_of(
        [[1.0, 4.0], [3.0, 0.0], [5.0, 5.0]], values=[[2.0, 2.0], [6.0, -2.0], [7.0, 7.0]], counts=[1, 2, 1]
    )
    key_grad = torch.tensor([[[1.0, 0.0], [1.0, 2.0], [9.0, 9.0]]])
    value_grad = torch.tensor([[[3.0, 1.0], [1.0, 1.0], [0.0, 0.0]]])
    merged = fisher_merge(cache, torch.tensor([True, False]), key_grad, value_grad, 1)
    # keys: element 0 weights 1, 1 -> (1 + 3) / 2; element 1 weights 0, 4 -> 0
    assert merged.keys[0].tolist() == [[2.0, 0.0], [5.0, 5.0]]
    # values: element 0 weights 9, 1 -> (18 + 6) / 10; element 1 weights 1, 1 -> 0
    assert torch.allclose(merged.values[0], torch.tensor([[2.4, 0.0], [7.0, 7.0]]))
    assert merged.counts.tolist() == [3.0, 1.0]  # counts add up


def test_merge_without_information_is_the_plain_average_and_runs_merge_into_one():
    cache = cache_of([[0.0], [3.0], [6.0], [9.0]])
    zero = torch.zeros_like(cache.keys)
    merged = fisher_merge(cache, torch.tensor([False, True, True]), zero, zero, 2)  # entries 1, 2, 3 form one run
    assert merge_groups(torch.tensor([False, True, True])).tolist() == [0, 1, 1, 1]
    assert merged.keys[0, :, 0].tolist() == [0.0, 6.0] and merged.counts.tolist() == [1.0, 3.0]
    grad = torch.tensor([[[5.0], [1.0], [0.0], [2.0]]])
    merged = fisher_merge(cache, torch.tensor([False, True, True]), grad, grad, 2)
    assert merged.keys[0, 1, 0].item() == pytest.approx((1 * 3 + 0 * 6 + 4 * 9) / 5)


def test_unmerged_entries_stay_bit_identical():
    torch.manual_seed(0)
    cache = LayerCache(torch.randn(2, 6, 4), torch.randn(2, 6, 4), torch.ones(6))
    merged = fisher_merge(
        cache, torch.tensor([False, False, True, False, False]), torch.randn(2, 6, 4), torch.randn(2, 6, 4), 1
    )
    assert torch.equal(merged.keys[:, :2], cache.keys[:, :2]) and torch.equal(merged.keys[:, 3:], cache.keys[:, 4:])


def test_a_merged_pair_of_identical_entries_attends_like_the_two_originals():
    torch.manual_seed(0)
    q = torch.randn(4, 3, 8)  # 4 query heads, 2 KV heads (GQA)
    k = torch.randn(2, 4, 8)
    v = torch.randn(2, 4, 8)
    k[:, 2], v[:, 2] = k[:, 1], v[:, 1]  # entries 1 and 2 identical
    original = count_weighted_attention(q, k, v, torch.zeros(3, 4), scale=0.3)
    merged = fisher_merge(
        LayerCache(k, v, torch.ones(4)), torch.tensor([False, True, False]), torch.randn_like(k), torch.randn_like(v), 1
    )
    assert torch.allclose(merged.keys[:, 1], k[:, 1], atol=1e-6) and merged.counts.tolist() == [1.0, 2.0, 1.0]
    bias = merged.log_counts[None, :].expand(3, -1)  # eq. 17: + log cnt
    compressed = count_weighted_attention(q, merged.keys, merged.values, bias, scale=0.3)
    assert torch.allclose(compressed, original, atol=1e-6)
    without_counts = count_weighted_attention(q, merged.keys, merged.values, torch.zeros(3, 3), scale=0.3)
    assert not torch.allclose(without_counts, original, atol=1e-3)


def test_pair_scores_are_normalized_by_position_and_sinks_never_merge():
    received = torch.tensor([9.0, 0.0, 0.0, 1.0, 1.0, 0.5, 0.5])
    scores = pair_scores(received, sink_length=2, sigma=4.0)
    assert torch.isinf(scores[:2]).all()  # pairs (0,1) and (1,2) touch a sink
    for i in range(2, 6):
        assert scores[i].item() == pytest.approx(math.exp(-i / 4.0) * (received[i] + received[i + 1]).item())
    # raw scores: pair 2 (0 + 1 = 1) < pair 5 (0.5 + 0.5 = 1)? equal; normalization prefers the later pair
    assert select_pairs(scores, 1, sink_length=2).nonzero().flatten().tolist() == [5]
    assert select_pairs(
        pair_scores(received, sink_length=0, sigma=4.0), 1, sink_length=0
    ).nonzero().flatten().tolist() == [1]


def test_normalization_can_overturn_the_raw_attention_order():
    received = torch.tensor([1.0, 0.40, 0.40, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5])
    raw_choice = select_pairs(pair_scores(received, 0, sigma=1e9), 1, 0).nonzero().item()
    normalized_choice = select_pairs(pair_scores(received, 0, sigma=4.0), 1, 0).nonzero().item()
    assert (raw_choice, normalized_choice) == (1, 8)


def test_selection_takes_exactly_n_pairs_outside_the_sinks():
    scores = pair_scores(torch.rand(20), sink_length=5, sigma=4096.0)
    chosen = select_pairs(scores, 14, sink_length=5)
    assert int(chosen.sum()) == 14 and not chosen[:5].any()
    with pytest.raises(ValueError, match="only 14 pairs"):
        select_pairs(scores, 15, sink_length=5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_attention_received_is_the_softmax_weights_summed_over_heads_and_queries(dtype):
    """eq. 18 as `attend` computes it for the merge (on the CPU from the fused kernel's log-sum-exp,
    the window's columns only), against the weights written out: 4 query heads on 2 KV heads, a
    window of 6 entries with counts (their + log count), a chunk of 3 under its causal mask."""
    from lm_eval_longmem.models.bounded_cache.attention import attend, attention_probabilities, logit_bias

    generator = torch.Generator().manual_seed(1)
    W, c, d = 6, 3, 8
    q = torch.randn(4, c, d, generator=generator).to(dtype)
    keys = torch.randn(2, W + c, d, generator=generator).to(dtype)
    values = torch.randn(2, W + c, d, generator=generator).to(dtype)
    log_counts = torch.tensor([0.0, 0.0, math.log(3), 0.0, math.log(2), 0.0])
    cos, sin = torch.ones(W + c, d, dtype=dtype), torch.zeros(W + c, d, dtype=dtype)  # no rotation
    out, received = attend(q, keys, values, log_counts, cos, sin, d**-0.5, want_received=True)
    weights = attention_probabilities(q.float(), keys.float(), logit_bias(log_counts, c, torch.float32), d**-0.5)
    expected = weights.sum(dim=(0, 1))[:W]
    tolerance = 1e-5 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(received, expected, rtol=tolerance, atol=tolerance)
    assert received.shape == (W,)
    plain, nothing = attend(q, keys, values, log_counts, cos, sin, d**-0.5, want_received=False)
    assert nothing is None
    torch.testing.assert_close(out, plain, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_attention_received_is_the_same_in_tiles_of_any_number_of_queries(monkeypatch, dtype):
    """eq. 18's sums go through one reused tile of scores; tiles of 1, 3 and 5 rows of a key-value head's
    queries (its group's heads one after another: 3 and 5 cut across the heads) give the sums of
    one tile, and those are the softmax weights written out."""
    from lm_eval_longmem.models.bounded_cache import attention

    generator = torch.Generator().manual_seed(2)
    W, c, d = 7, 4, 8
    q = torch.randn(6, c, d, generator=generator).to(dtype)  # 6 query heads on 2 key-value heads
    keys = torch.randn(2, W + c, d, generator=generator).to(dtype)
    log_counts = torch.log(torch.tensor([1.0, 2.0, 1.0, 5.0, 1.0, 1.0, 3.0]))
    bias = attention.logit_bias(log_counts, c, torch.float32)
    lse = attention.biased_scores(q.float(), keys.float(), bias, d**-0.5).logsumexp(dim=-1)
    whole = attention.received_from_lse(q, keys[:, :W], log_counts, lse, d**-0.5)
    for rows in (1, 3, 5):
        monkeypatch.setattr(attention, "RECEIVED_TILE_BYTES", 4 * 2 * W * rows)
        torch.testing.assert_close(attention.received_from_lse(q, keys[:, :W], log_counts, lse, d**-0.5), whole)
    written_out = attention.attention_probabilities(q.float(), keys.float(), bias, d**-0.5).sum(dim=(0, 1))[:W]
    tolerance = 1e-5 if dtype == torch.float32 else 3e-2
    torch.testing.assert_close(whole, written_out, rtol=tolerance, atol=tolerance)

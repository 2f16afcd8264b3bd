"""Random inputs of the retrieval attention and its output written out query by query, through the
reference grouped softmax: the chosen blocks (valid slots only) then the window up to the query."""

from __future__ import annotations

import torch

from lm_eval_longmem.kernels.grouped_softmax import reference_grouped_softmax


def random_case(heads=4, kv_heads=2, windows=3, window=8, block=4, k=2, dim=8, blocks=5, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    n = windows * window

    def rand(*shape):
        return (torch.randn(*shape, generator=g) * 1.5).to(dtype)

    chosen = torch.randint(0, blocks, (heads, n, k), generator=g)
    valid = torch.rand(heads, n, k, generator=g) < 0.7
    valid[:, :window] = False  # a first window reads nothing, as in a row
    return dict(
        slot_queries=rand(heads, n, k, dim),
        window_queries=rand(heads, n, dim),
        window_keys=rand(kv_heads, n, dim),
        window_values=rand(kv_heads, n, dim),
        store_keys=rand(kv_heads, blocks, block, dim),
        store_values=rand(kv_heads, blocks, block, dim),
        chosen=chosen,
        slot_valid=valid,
        window=window,
        scaling=dim**-0.5,
    )


def written_out(case: dict, softcap: float | None = None) -> torch.Tensor:
    """[H, N, d] in float64, one query and head at a time."""
    c = {name: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for name, v in case.items()}
    heads, n, k, dim = c["slot_queries"].shape
    group, window = heads // c["window_keys"].shape[0], c["window"]
    out = torch.zeros(heads, n, dim, dtype=torch.float64)
    for h in range(heads):
        kv = h // group
        for t in range(n):
            keys, values, queries = [], [], []
            for slot in range(k):
                if c["slot_valid"][h, t, slot]:
                    b = c["chosen"][h, t, slot]
                    keys.append(c["store_keys"][kv, b])
                    values.append(c["store_values"][kv, b])
                    queries.append(c["slot_queries"][h, t, slot].expand(keys[-1].shape[0], -1))
            start = t // window * window
            keys.append(c["window_keys"][kv, start : t + 1])
            values.append(c["window_values"][kv, start : t + 1])
            queries.append(c["window_queries"][h, t].expand(t + 1 - start, -1))
            scores = (torch.cat(queries) * torch.cat(keys)).sum(-1) * c["scaling"]
            if softcap:
                scores = torch.tanh(scores / softcap) * softcap
            weights = reference_grouped_softmax(scores[None], c["store_keys"].shape[2])[0]
            out[h, t] = weights @ torch.cat(values)
    return out

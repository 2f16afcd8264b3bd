"""The compiled top-keys kernel (LongCache's recall) on a CUDA GPU against its reference (skipped
without CUDA): the interpreter tests (test_top_keys_triton.py) check its logic at tiny sizes; these
check the compile and the study's shapes (`scripts/gpu-check.sh --only cuda-tests` selects them by
name)."""

from __future__ import annotations

import pytest
import torch

from lm_eval_longmem.kernels.forgetting_attention.dispatch import triton_interpreter_enabled
from lm_eval_longmem.kernels.top_keys import reference_top_keys

pytestmark = [
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
    pytest.mark.skipif(triton_interpreter_enabled(), reason="TRITON_INTERPRET=1: these tests are for compiled kernels"),
]


# (heads, kv heads, queries, keys, head dim, k): the 1B benchmark's layer at 16k (28 recalling chunks
# of 512 queries, middles up to 14k), a narrower one with D 128, and ties from repeated keys
@pytest.mark.parametrize(
    ("heads", "kv_heads", "rows", "width", "dim", "k"),
    [(32, 8, 28 * 512, 14_336, 64, 4), (8, 2, 4 * 512, 3_000, 128, 5)],
)
def test_compiled_kernel_picks_the_references_keys(heads, kv_heads, rows, width, dim, k):
    from lm_eval_longmem.kernels.top_keys.triton_top_keys import triton_top_keys

    generator = torch.Generator(device="cuda").manual_seed(rows)
    queries = torch.randn(heads, rows, dim, device="cuda", generator=generator)
    keys = torch.randn(kv_heads, width, dim, device="cuda", generator=generator)
    visible = torch.randint(0, width + 1, (rows,), device="cuda", generator=generator)
    value, index = triton_top_keys(queries, keys, visible, k)
    agree = total = 0
    for first in range(0, rows, 512):  # the reference's scores in pieces: [heads, 512, width] at a time
        part = slice(first, first + 512)
        want_value, want_index = reference_top_keys(queries[:, part], keys, visible[part], k)
        picked = torch.isfinite(want_value)
        assert torch.equal(torch.isfinite(value[:, part]), picked)
        torch.testing.assert_close(value[:, part][picked], want_value[picked], rtol=1e-4, atol=1e-4)
        agree += int((index[:, part][picked] == want_index[picked]).sum())
        total += int(picked.sum())
    # float32 sums in another order may swap two keys whose scores differ by rounding, rarely
    assert agree >= 0.999 * total


def test_compiled_kernel_breaks_ties_toward_the_earlier_key():
    from lm_eval_longmem.kernels.top_keys.triton_top_keys import triton_top_keys

    generator = torch.Generator(device="cuda").manual_seed(5)
    queries = torch.randint(-2, 3, (4, 1000, 64), device="cuda", generator=generator).float()
    distinct = torch.randint(-2, 3, (2, 5, 64), device="cuda", generator=generator).float()
    keys = distinct[:, torch.randint(0, 5, (5000,), device="cuda", generator=generator)]
    visible = torch.randint(2000, 5001, (1000,), device="cuda", generator=generator)
    value, index = triton_top_keys(queries, keys, visible, 4)
    want_value, want_index = reference_top_keys(queries, keys, visible, 4)
    assert torch.equal(value, want_value) and torch.equal(index, want_index)

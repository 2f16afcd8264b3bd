"""Layer-major Landmark scoring (every window of a row in one pass per layer) against the
window-by-window sequence, the reference checked against the official code (test_landmark.py).

Tolerance: fp32, atol 2e-5 on final hidden states of size ~1. The two paths compute the same
sums in different shapes (all windows' products in one batched matmul, a landmark's score as a
sum over d instead of a row of a matmul) and read RoPE tables at other absolute positions (a
window at 0 instead of after its slot area: the same differences, other roundings), so they
agree to float32 rounding (observed <= 1e-6), not bit for bit. A different block choice anywhere
moves outputs by ~1e-2 on these models (their q/k projections are scaled so scores are of order
1), so the tolerance cannot hide one.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, LlamaConfig

from lm_eval_longmem.models.landmark.layer_major import LayerMajorLandmark
from lm_eval_longmem.models.landmark.retrieval import top_blocks
from lm_eval_longmem.models.landmark.sequence import LandmarkSequence
from lm_eval_longmem.models.runtime.llama_decoder import Decoder
from tests.helpers.tiny_families import FAMILIES, build_family_model
from tests.helpers.tiny_models import tiny_of

BLOCK, TOP_K, WINDOW = 4, 3, 20
ATOL = 2e-5


def window_by_window(decoder, ids, **options) -> torch.Tensor:
    sequence = LandmarkSequence(decoder, BLOCK, options.pop("top_k", TOP_K), WINDOW, **options)
    with torch.no_grad():
        return torch.cat([sequence.feed(ids[start : start + WINDOW]) for start in range(0, len(ids), WINDOW)])


def layer_major(decoder, ids, **options) -> torch.Tensor:
    return LayerMajorLandmark(decoder, BLOCK, options.pop("top_k", TOP_K), WINDOW, **options).hidden(ids)


def ids_of(length: int, seed: int = 0) -> list[int]:
    return torch.randint(4, 60, (length,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.fixture(scope="module")
def llama():
    model = tiny_of(LlamaConfig)
    with torch.no_grad():  # scores of order 1, so that block choices are decisive (tiny_families.QK_GAIN)
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(12.0)
            layer.self_attn.k_proj.weight.mul_(12.0)
    return model


def test_visible_blocks_limit_the_choice_and_keep_the_tie_rule():
    """Rows that see 4, 2 and 0 of 4 blocks, k = 3: a full row as without the mask (ties to the most
    recent), a short row takes all it sees first, hidden blocks fill the rest after them."""
    scores = torch.tensor([[5.0, 1.0, 1.0, 1.0], [9.0, 0.0, 7.0, 8.0], [1.0, 2.0, 3.0, 4.0]])
    visible = torch.arange(4) < torch.tensor([[4], [2], [0]])
    chosen = top_blocks(scores, 3, visible)
    assert chosen[0].tolist() == top_blocks(scores[:1], 3)[0].tolist() == [0, 2, 3]
    assert chosen[1, :2].tolist() == [0, 1] and set(chosen[1, 2:].tolist()) <= {2, 3}
    assert all(b >= 0 for b in chosen[2].tolist())  # any blocks: the caller closes every slot


@pytest.mark.parametrize(
    "length",
    [7, 20, 33, 40, 97, 161],  # shorter than a window, exactly one, partial last windows, whole ones, many
)
@pytest.mark.parametrize("selection", ["per_token_and_head", "max_over_tokens"])
def test_equals_the_window_by_window_sequence(llama, length, selection):
    decoder, ids = Decoder(llama), ids_of(length, seed=length)
    want = window_by_window(decoder, ids, selection=selection)
    got = layer_major(decoder, ids, selection=selection)
    assert got.shape == want.shape
    assert torch.allclose(got, want, atol=ATOL, rtol=0)


@pytest.mark.parametrize(
    "top_k, length",
    [(1, 130), (2, 130), (7, 130), (7, 33)],  # 7: more than the first windows' blocks (5 per window), or all of them
)
def test_equals_the_sequence_for_any_top_k(llama, top_k, length):
    decoder, ids = Decoder(llama), ids_of(length, seed=top_k)
    assert torch.allclose(
        layer_major(decoder, ids, top_k=top_k), window_by_window(decoder, ids, top_k=top_k), atol=ATOL
    )


def test_retrieval_off_equals_the_sequence_and_retrieval_matters(llama):
    decoder, ids = Decoder(llama), ids_of(100, seed=3)
    off = layer_major(decoder, ids, retrieval=False)
    assert torch.allclose(off, window_by_window(decoder, ids, retrieval=False), atol=ATOL)
    assert (off - layer_major(decoder, ids)).abs().max() > 100 * ATOL  # the comparisons above are not vacuous


@pytest.fixture(scope="module")
def family_models(tmp_path_factory, tiny_model_dir):
    root = tmp_path_factory.mktemp("landmark_families")
    return {
        f: AutoModelForCausalLM.from_pretrained(build_family_model(f, root / f, tiny_model_dir)).eval()
        for f in FAMILIES
    }


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_equals_the_sequence(family_models, family):
    """GQA, q/k norms (Qwen3), soft-capping and query pre-scaling (Gemma 2), per-layer-type RoPE
    (Gemma 3), partial rotary and a fused projection (Phi-3)."""
    decoder, ids = Decoder(family_models[family]), ids_of(90, seed=7)
    want, got = window_by_window(decoder, ids), layer_major(decoder, ids)
    assert torch.allclose(got, want, atol=ATOL * max(1.0, want.abs().max().item()), rtol=0)

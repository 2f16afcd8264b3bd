"""The bounded caches read nothing back from the device per chunk and layer. On a GPU every such
read (`.item()`, `int(tensor)`, boolean indexing, `torch.unique`, `bincount`, `nonzero`) drains the
queue, so a read inside the chunk-by-layer loop stalls the pipeline once per layer: the counts are
pinned here on the CPU, where the profiler records the same ops, for two row lengths. Stated-CLM
scores through the chunk runner; StreamingLLM and LongCache layer by layer (LongCache's recall
included: fixed slot lists, no `nonzero`)."""

import pytest
import torch
from torch.profiler import ProfilerActivity, profile
from transformers import LlamaConfig

from lm_eval_longmem.models.method_registry import build_method
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from lm_eval_longmem.models.runtime.token_upload import ids_to_device
from tests.helpers.tiny_models import tiny_of, token_ids

BUDGET = {"max_context_length": 24, "chunk_size": 8, "sink_length": 4}
EXTRA = {"longcache": {"top_k_prime": 3, "span_size": 2}}
# ops that wait for the device on CUDA: a value read, or an output whose size depends on the data
DEVICE_READS = ("aten::_local_scalar_dense", "aten::nonzero", "aten::bincount", "aten::masked_select")


def device_reads(method, model, length: int) -> int:
    row = token_ids(length, seed=length)
    span = ScoredSpan(length - 9, tuple(row[length - 8 :]))
    scorer = method.make_scorer(model)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        scorer.score(torch.tensor([row]), [span])
    return sum(e.count for e in prof.key_averages() if e.key in DEVICE_READS or "unique" in e.key)


@pytest.fixture(scope="module")
def model():
    return tiny_of(LlamaConfig)


@pytest.mark.parametrize("name", ["streamingllm", "statedclm", "longcache"])
def test_device_reads_per_scoring_call_do_not_grow_with_chunks_and_layers(model, name):
    method = build_method(name, {**BUDGET, **EXTRA.get(name, {})})
    method.prepare_model(model)
    # the totals' two reads (log-likelihood, greedy hits) per scored piece: the chunk runner's span
    # falls in 2 chunks, the layer-major scorers score it in one piece
    totals = 4 if name == "statedclm" else 2
    for length in (48, 96):  # 6 and 12 chunks, 2 and 8 of them past the budget
        assert device_reads(method, model, length) == totals


def test_token_ids_reach_the_device_unchanged(device):
    ids = token_ids(40, seed=5)
    uploaded = ids_to_device(ids, torch.device(device))
    assert uploaded.device.type == device and uploaded.dtype == torch.long and uploaded.tolist() == ids

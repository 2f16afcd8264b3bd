"""What a stated-CLM scoring call dispatches, counted on the CPU (models/runtime/dispatch_count.py):
on a GPU each computing op is a kernel launch and each host read a stall of the queue.

Once the cache is full, every chunk adds the same number of ops: a fixed part (the merge of every
layer at once, the loss, the stacking) plus the forward and backward of each layer, and no host read.
The counts are pinned for a tiny Llama of 2 and 4 layers; the chunk runner (what scored stated-CLM
before the static step) dispatched 150 ops per layer and chunk, with the merge run layer by layer,
where the step dispatches 102 per layer and 57 for the whole merge. The numbers are torch's (2.13)
decompositions of these ops: a torch upgrade may move them; re-measure then, the shape must stay."""

import pytest
import torch
from transformers import LlamaConfig

from lm_eval_longmem.kernels.c_library import SWITCH_ENV
from lm_eval_longmem.models.method_registry import build_method
from lm_eval_longmem.models.runtime.dispatch_count import DispatchCount
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from tests.helpers.tiny_models import tiny_of, token_ids

ARGS = {"max_context_length": 21, "chunk_size": 6, "sink_length": 3}
LENGTHS = (30, 36, 42, 48)  # 0 to 3 steady chunks (the first 24 tokens fill the cache; the last chunk shrinks nothing)
PER_LAYER = 102  # forward (projections, RoPE, attention, the attention received, MLP) and its backward
PER_CHUNK = 57  # the merge of all layers, the bias, the loss, the gradients stacked, the new entries appended
SCORE_READS = 2  # the totals of the one scored chunk (the span lies in the last chunk), read when it is scored

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(autouse=True)
def the_gpus_merge(monkeypatch):
    """Counted on the path a GPU runs: on the CPU the merge is one C call (`fisher_average_cpu.c`), 27
    ops fewer per chunk."""
    monkeypatch.setenv(SWITCH_ENV, "0")


def llama(layers: int):
    return tiny_of(LlamaConfig, num_hidden_layers=layers)


def counted(layers: int) -> list[DispatchCount]:
    model = llama(layers)
    method = build_method("statedclm", ARGS)
    method.prepare_model(model)
    scorer = method.make_scorer(model)
    counters = []
    for length in (LENGTHS[-1], *LENGTHS):  # the first call fills the tables made once (RoPE, eq. 19's decay)
        row = token_ids(length + 1, seed=length)
        span = ScoredSpan(length - 3, tuple(row[length - 2 :]))  # two targets, in the last chunk
        with DispatchCount() as counter:
            scorer.score(torch.tensor([row]), [span])
        counters.append(counter)
    return counters[1:]


@pytest.mark.parametrize("layers", [2, 4])
def test_each_steady_chunk_dispatches_a_fixed_number_of_ops(layers):
    counters = counted(layers)
    growth = [later.ops - earlier.ops for earlier, later in zip(counters, counters[1:])]
    # the first steady chunk also stacks the runner's caches (3 ops: keys, values, counts)
    assert growth == [PER_CHUNK + PER_LAYER * layers + 3] + [PER_CHUNK + PER_LAYER * layers] * 2


@pytest.mark.parametrize("layers", [2, 4])
def test_no_host_reads_in_the_steady_state(layers):
    for counter in counted(layers):
        assert dict(counter.reads_by_op) == {"_local_scalar_dense": SCORE_READS}, counter.reads_by_op

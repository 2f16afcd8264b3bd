"""Landmark scoring dispatches the same number of ops whatever the number of windows, and reads
nothing back from the device while the layers run.

On a GPU every computing op is a kernel launch and every host read drains the queue; the
window-by-window sequence dispatched about 200 ops per window and layer, so its launches grew
with the input. Counted on the CPU (models/runtime/dispatch_count.py), where the same ops are
dispatched, deterministically.
"""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig

from lm_eval_longmem.models.landmark.checkpoint import record_layout
from lm_eval_longmem.models.landmark.layout import insert_landmarks
from lm_eval_longmem.models.methods.landmark import Landmark, LandmarkArgs
from lm_eval_longmem.models.runtime.dispatch_count import count_dispatch
from lm_eval_longmem.models.runtime.scoring import ScoredSpan
from tests.helpers.tiny_models import tiny_of, token_ids

LANDMARK = 63
LENGTHS = (60, 120, 240)  # visible tokens: 4, 8 and 16 windows of 20 augmented tokens (blocks of 4, top_k 2)
SPAN_TOTAL_READS = 2  # SpanTotals' float() and int() of a row's totals, once per row


def warm_scorer(selection: str = "per_token_and_head"):
    model = tiny_of(LlamaConfig)
    record_layout(model.config, LANDMARK, 4, 32, True)
    method = Landmark(LandmarkArgs(top_k=2, selection=selection))
    method.prepare_model(model)
    assert method.window == 20
    scorer = method.make_scorer(model)
    scorer.score(*request(40))  # warm: the RoPE tables are made once per scorer
    return scorer


def request(length: int):
    row = token_ids(length, seed=length)
    return torch.tensor([row]), [ScoredSpan(length - 9, tuple(row[length - 8 :]))]


@pytest.mark.parametrize("selection", ["per_token_and_head", "max_over_tokens"])
def test_ops_per_scoring_call_do_not_grow_with_the_number_of_windows(selection):
    scorer = warm_scorer(selection)
    counts = [count_dispatch(scorer.score, *request(length))[0] for length in LENGTHS]
    assert len({c.ops for c in counts}) == 1, [c.ops for c in counts]
    assert [dict(c.reads_by_op) for c in counts] == [{"_local_scalar_dense": SPAN_TOTAL_READS}] * len(LENGTHS)


def test_the_layers_read_nothing_back():
    scorer = warm_scorer()
    row = insert_landmarks(token_ids(240, seed=1), 4, LANDMARK)
    counted, hidden = count_dispatch(scorer.start_sequence().layer_major.hidden, row)
    assert hidden.shape[0] == len(row) and counted.host_reads == 0
    # and the counter sees reads where there are some
    assert count_dispatch(lambda: hidden.sum().item())[0].host_reads == 1

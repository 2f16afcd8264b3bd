"""Round-robin document order: `--limit N` keeps every bucket of a per-bucket metric."""

from lm_eval_longmem.tasks.doc_order import round_robin
from lm_eval_longmem.tasks.forgetting_curve.task import ForgettingCurveTask


def test_round_robin():
    assert round_robin([["a1", "a2"], ["b1"], ["c1", "c2", "c3"]]) == ["a1", "b1", "c1", "a2", "c2", "c3"]
    assert round_robin([]) == [] and round_robin([[None, 0]]) == [None, 0]


def test_forgetting_curve_lists_lengths_round_robin(tiny_model_dir, corpus_file):
    metadata = {"pretrained": str(tiny_model_dir), "fc_corpus": str(corpus_file), "fc_lengths": [8, 16, 24], "fc_samples": 3}
    docs = list(ForgettingCurveTask(config={"task": "forgetting_curve", "metadata": metadata}).test_docs())
    assert [d["length"] for d in docs[:3]] == [8, 16, 24] and [d["sample"] for d in docs[:3]] == [0, 0, 0]
    assert [(d["length"], d["sample"]) for d in docs[3:6]] == [(8, 1), (16, 1), (24, 1)]

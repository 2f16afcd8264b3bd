"""The forgetting_curve task built directly (no CLI): data, requests, errors."""

import pytest

from lm_eval_longmem.data.corpora import CorpusUnavailableError
from lm_eval_longmem.models.runtime.requests import ScoredContinuation, token_ids_of
from lm_eval_longmem.tasks.forgetting_curve.protocol import ForgettingCurveConfigError
from lm_eval_longmem.tasks.forgetting_curve.sequences import copy_sequence, lm_sequence, scored_range
from lm_eval_longmem.tasks.forgetting_curve.task import ForgettingCurveTask


def make_task(tiny_model_dir, corpus_file, **options):
    metadata = {"pretrained": str(tiny_model_dir), "method": "vanilla", "fc_corpus": str(corpus_file)}
    metadata.update({f"fc_{k}": v for k, v in options.items()})
    return ForgettingCurveTask(config={"task": "forgetting_curve", "metadata": metadata})


def test_docs_follow_the_protocol(tiny_model_dir, corpus_file):
    task = make_task(tiny_model_dir, corpus_file, max_length=40, points=3, samples=4)
    docs = list(task.test_docs())
    assert task.lengths == [8, 24, 40] and len(docs) == 12
    assert all(len(d["target_ids"]) == d["length"] == len(d["irrelevant_ids"]) for d in docs)
    protocol = task.config.metadata["protocol"]
    assert protocol["context_length"] == 128 and protocol["max_fitting_length"] == 63
    assert protocol["bos_id"] == 1 and protocol["eos_id"] == 2 and protocol["samples"] == 4


def test_default_lengths_reach_the_claimed_length(tiny_model_dir, corpus_file):
    """The paper's grid goes up to l (here the tiny Llama's 128), inputs 2l + 1 past it (RoPE)."""
    task = make_task(tiny_model_dir, corpus_file, samples=1)
    assert len(task.lengths) == 32 and task.lengths[-1] == 128
    plan = task.config.metadata["protocol"]["length_plan"]
    assert all(p["input_tokens"] == 2 * p["length"] + 1 and p["status"] == "planned" for p in plan)
    assert all(p["beyond_training_length"] == (p["length"] >= 64) for p in plan)  # 2L + 1 > 128
    assert plan[-1]["input_tokens"] == 257 and plan[-1]["beyond_context_length"]


def test_same_seed_same_docs_other_seed_other_docs(tiny_model_dir, corpus_file):
    a = list(make_task(tiny_model_dir, corpus_file, lengths=[16], samples=3, seed=5).test_docs())
    b = list(make_task(tiny_model_dir, corpus_file, lengths=[16], samples=3, seed=5).test_docs())
    c = list(make_task(tiny_model_dir, corpus_file, lengths=[16], samples=3, seed=6).test_docs())
    assert a == b and a != c


def test_two_token_exact_requests_per_doc(tiny_model_dir, corpus_file):
    task = make_task(tiny_model_dir, corpus_file, lengths=[9], samples=1)
    doc = task.test_docs()[0]
    copy_req, lm_req = task.construct_requests(doc, "", metadata=("forgetting_curve", 0, 1))
    start, end = scored_range(9)
    copy = copy_sequence(doc["target_ids"], 1, 2)
    lm = lm_sequence(doc["irrelevant_ids"], doc["target_ids"], 1, 2)
    assert (copy_req.idx, lm_req.idx) == (0, 1)
    assert (
        list(token_ids_of(copy_req.args[0])) == copy[:start] and list(token_ids_of(copy_req.args[1])) == copy[start:end]
    )
    assert list(token_ids_of(lm_req.args[0])) == lm[:start] and list(token_ids_of(lm_req.args[1])) == lm[start:end]
    assert len(token_ids_of(copy_req.args[1])) == 5  # ceil(9 / 2)
    assert copy_req.args[0].startswith("<s>")  # decoded text, for models that take strings


def test_process_results_exact_and_reduced(tiny_model_dir, corpus_file):
    task = make_task(tiny_model_dir, corpus_file, lengths=[9], samples=1)
    doc = task.test_docs()[0]
    exact = task.process_results(doc, [ScoredContinuation(-1.0, False, 4, 5), ScoredContinuation(-9.0, False, 1, 5)])
    assert exact["copy_acc@9"] == 0.8 and exact["lm_acc@9"] == 0.2
    assert exact["curve"] == {"length": 9, "copy": 0.8, "lm": 0.2}
    reduced = task.process_results(doc, [(-1.0, True), (-10.0, False)])
    assert reduced["copy_exact@9"] == 1.0 and reduced["lm_nll@9"] == pytest.approx(2.0)
    assert set(exact) | set(reduced) <= set(task.aggregation()) and set(task.aggregation()) == set(
        task.higher_is_better()
    )


def test_no_runnable_length_is_reported_before_any_work(tiny_model_dir, corpus_file):
    """An explicit max_length caps the inputs; when no length fits it, nothing starts."""
    metadata = {
        "pretrained": str(tiny_model_dir),
        "max_length": 100,
        "fc_corpus": str(corpus_file),
        "fc_lengths": [60, 64],
    }
    with pytest.raises(ForgettingCurveConfigError, match="longest length that fits is 49"):
        ForgettingCurveTask(config={"task": "forgetting_curve", "metadata": metadata})


def test_explicit_max_length_lets_users_probe_beyond_training(tiny_model_dir, corpus_file):
    metadata = {
        "pretrained": str(tiny_model_dir),
        "max_length": 256,
        "fc_corpus": str(corpus_file),
        "fc_lengths": [100],
        "fc_samples": 1,
    }
    task = ForgettingCurveTask(config={"task": "forgetting_curve", "metadata": metadata})
    assert task.lengths == [100] and task.config.metadata["protocol"]["training_length"] == 128


def test_missing_corpus_offline_names_the_fix(tiny_model_dir):
    with pytest.raises(CorpusUnavailableError, match="fc_corpus=shakespeare"):
        ForgettingCurveTask(
            config={"task": "forgetting_curve", "metadata": {"pretrained": str(tiny_model_dir), "fc_corpus": "pg19"}}
        )

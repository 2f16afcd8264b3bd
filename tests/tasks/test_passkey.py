"""The longmem_passkey task built directly (no CLI): documents, keys, metrics, errors."""

import json
from collections import Counter

import pytest
from lm_eval.api.instance import Instance

from lm_eval_longmem.data.passkey_prompt import key_line, prompt_for_characters
from lm_eval_longmem.tasks.passkey.metrics import Grid, grid
from lm_eval_longmem.tasks.passkey.protocol import PasskeyConfigError
from lm_eval_longmem.tasks.passkey.task import PasskeyTask


def make_task(tiny_model_dir, **options):
    metadata = {"version": 1.0, "pretrained": str(tiny_model_dir), "method": "vanilla"}
    metadata.update({f"pk_{k}": v for k, v in options.items()})
    return PasskeyTask(config={"task": "longmem_passkey", "metadata": metadata})


@pytest.fixture(scope="module")
def task(tiny_model_dir):
    return make_task(tiny_model_dir, lengths=[64, 96, 118], depths=[0, 50, 100], samples=2, seed=3)


def test_docs_cover_the_grid_and_fit(task, tiny_model_dir):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    docs = list(task.test_docs())
    assert Counter((d["length"], d["depth"]) for d in docs) == {(L, d): 2 for L in (64, 96, 118) for d in (0, 50, 100)}
    for doc in docs:
        assert doc["prompt_tokens"] == len(tokenizer(doc["prompt"])["input_ids"]) <= doc["length"]
        assert key_line(doc["key"]) in doc["prompt"] and 1 <= doc["key"] <= 50000
        assert task.doc_to_text(doc) == doc["prompt"] and task.doc_to_target(doc) == str(doc["key"])
    assert task.config.metadata["protocol"]["lengths"] == [64, 96, 118]


def test_limit_keeps_every_cell(task):
    docs = list(task.test_docs())
    assert {(d["length"], d["depth"]) for d in docs[:9]} == {(L, d) for L in (64, 96, 118) for d in (0, 50, 100)}
    assert {d["sample"] for d in docs[:9]} == {0}


def test_keys_are_seeded_per_cell(tiny_model_dir, task):
    keys = [d["key"] for d in task.test_docs()]
    again = [
        d["key"]
        for d in make_task(tiny_model_dir, lengths=[64, 96, 118], depths=[0, 50, 100], samples=2, seed=3).test_docs()
    ]
    other = [
        d["key"]
        for d in make_task(tiny_model_dir, lengths=[64, 96, 118], depths=[0, 50, 100], samples=2, seed=4).test_docs()
    ]
    assert keys == again and keys != other and len(set(keys)) == len(keys)
    # adding a length leaves the keys of the other cells as they were
    more = {
        (d["length"], d["depth"], d["sample"]): d["key"]
        for d in make_task(
            tiny_model_dir, lengths=[64, 96, 100, 118], depths=[0, 50, 100], samples=2, seed=3
        ).test_docs()
    }
    assert all(more[(d["length"], d["depth"], d["sample"])] == d["key"] for d in task.test_docs())


def test_greedy_generation_request(task):
    doc = task.test_docs()[0]
    req = task.construct_requests(doc, task.doc_to_text(doc), metadata=("longmem_passkey", 0, 1))
    assert isinstance(req, Instance) and req.request_type == "generate_until"
    context, gen_kwargs = req.args
    assert context == doc["prompt"]
    assert gen_kwargs["do_sample"] is False and gen_kwargs["max_gen_toks"] == 10


def test_metric_keys_per_length_and_depth(task):
    doc = next(d for d in task.test_docs() if d["length"] == 96 and d["depth"] == 50)
    right = task.process_results(doc, [f" {doc['key']}. Remember it."])
    wrong = task.process_results(doc, [" 1"])
    assert {k: right[k] for k in right if k != "grid"} == {"acc": 1.0, "acc@len096": 1.0, "acc@depth050": 1.0}
    assert wrong["acc"] == 0.0 and wrong["grid"]["correct"] == 0.0 and wrong["grid"]["answer"] == 1
    names = set(task.aggregation())
    assert names == {
        "acc",
        "acc@len064",
        "acc@len096",
        "acc@len118",
        "acc@depth000",
        "acc@depth050",
        "acc@depth100",
        "grid",
    }
    assert set(task.higher_is_better()) == names


def test_grid_aggregates_rows_by_depth_columns_by_length():
    records = [
        {"length": 64, "depth": 0, "correct": 1.0, "unit": "tokens"},
        {"length": 64, "depth": 0, "correct": 0.0, "unit": "tokens"},
        {"length": 128, "depth": 0, "correct": 1.0, "unit": "tokens"},
        {"length": 64, "depth": 100, "correct": 1.0, "unit": "tokens"},
    ]
    g = grid(records)
    assert isinstance(g, Grid)
    assert g["lengths"] == [64, 128] and g["depths"] == [0, 100]
    assert g["accuracy"] == [[0.5, 1.0], [1.0, None]] and g["num_samples"] == [[2, 1], [1, 0]]
    assert g["overall"] == 0.75
    # the printed table sees one short summary; the results JSON gets everything
    assert list(g.keys()) == ["summary"] and dict(g) == {"summary": str(g)} and "2 lengths x 2 depths" in str(g)
    assert json.loads(json.dumps(g))["accuracy"] == [[0.5, 1.0], [1.0, None]]


def test_character_protocol(tiny_model_dir):
    task = make_task(tiny_model_dir, lengths=[40, 120], depths=[25], samples=1, protocol="chars")
    for doc in task.test_docs():
        assert doc["prompt"] == prompt_for_characters(doc["length"], 25, doc["key"])
    assert task.config.metadata["protocol"]["length_unit"] == "characters"


def test_too_long_lengths_are_refused(tiny_model_dir):
    with pytest.raises(PasskeyConfigError, match=r"\[119\].*longest prompt is 118"):
        make_task(tiny_model_dir, lengths=[64, 119])
    with pytest.raises(PasskeyConfigError, match="pk_protocol=chars, length 5000 gives a prompt of"):
        make_task(tiny_model_dir, lengths=[5000], protocol="chars")
    # an explicit max_length raises the limit, the same rule the wrapper applies
    metadata = {
        "pretrained": str(tiny_model_dir),
        "max_length": 256,
        "pk_lengths": [200],
        "pk_depths": [0],
        "pk_samples": 1,
    }
    assert PasskeyTask(config={"task": "longmem_passkey", "metadata": metadata}).test_docs()[0]["prompt_tokens"] <= 200

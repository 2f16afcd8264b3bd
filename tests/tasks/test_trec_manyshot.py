"""Many-shot TREC: prompt strings, data loading from files in the real schema, the protocol."""

import json
import logging

import pytest

from lm_eval_longmem.data.hub_datasets import DatasetUnavailableError
from lm_eval_longmem.data.trec import COGCOMP_FINE_NAMES, FINE_LABELS, load_manyshot_rows, load_trec
from lm_eval_longmem.tasks.prompt_budget import PromptBudget
from lm_eval_longmem.tasks.task_options import TaskOptionError, parse_task_options
from lm_eval_longmem.tasks.trec_manyshot import longbench_format
from lm_eval_longmem.tasks.trec_manyshot.protocol import (
    OPTION_PREFIX,
    TrecOptions,
    build_buckets,
    fitting_buckets,
)
from tests.helpers.data_fixtures import PLAUSIBLE_TREC_QUESTIONS, longbench_label, write_trec_fixture

TRAIN, TEST = PLAUSIBLE_TREC_QUESTIONS[:56], PLAUSIBLE_TREC_QUESTIONS[56:]


@pytest.fixture(scope="module")
def trec_dir(tmp_path_factory):
    return write_trec_fixture(tmp_path_factory.mktemp("trec"), TRAIN, TEST)


def test_prompt_is_longbench_s_template_exactly():
    demos = [("What does NATO stand for ?", "Expression abbreviated"), ("Who wrote Hamlet ?", "Individual")]
    expected = (
        "Please determine the type of the question below. Here are some examples of questions.\n\n"
        "Question: What does NATO stand for ?\nType: Expression abbreviated\n"
        "Question: Who wrote Hamlet ?\nType: Individual\n"
        "Question: Why is the sky blue ?\nType:"
    )
    assert longbench_format.prompt(demos, "Why is the sky blue ?") == expected
    # The same string as LongBench's "{instruction}{context}\n{input}" with its context/input fields.
    context = "\n".join(f"Question: {q}\nType: {label}" for q, label in demos)
    longbench = longbench_format.INSTRUCTION + f"{context}\n" + "Question: Why is the sky blue ?\nType:"
    assert longbench == expected
    assert longbench_format.prefix_from_longbench_context(context) == longbench_format.shared_prefix(demos)


def test_cogcomp_ids_map_to_longbench_names():
    assert len(COGCOMP_FINE_NAMES) == len(FINE_LABELS) == 50
    pairs = dict(zip(COGCOMP_FINE_NAMES, FINE_LABELS))
    assert pairs["ABBR:exp"] == "Expression abbreviated" and pairs["HUM:gr"] == "Group or organization of person"
    assert pairs["NUM:period"] == "Lasting time of somethin" and pairs["NUM:perc"] == "Percent, fraction"
    assert pairs["NUM:money"] == "Price" and pairs["ENTY:cremat"] == "Invention, book and other creative piece"


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_local_copies_in_the_real_schema_load(tmp_path, fmt):
    directory = write_trec_fixture(tmp_path / fmt, TRAIN, TEST, fmt=fmt)
    splits = load_trec(str(directory))
    assert [len(splits["train"]), len(splits["test"])] == [56, len(TEST)]
    assert splits["train"][0].text == TRAIN[0][0] and splits["train"][0].label == longbench_label(TRAIN[0][1])


def test_local_copy_with_other_class_names_is_refused(tmp_path):
    import datasets

    features = datasets.Features(
        {"text": datasets.Value("string"), "fine_label": datasets.ClassLabel(names=["a", "b"])}
    )
    for split in ("train", "test"):
        datasets.Dataset.from_dict({"text": ["q"], "fine_label": [0]}, features=features).to_parquet(
            str(tmp_path / f"{split}.parquet")
        )
    with pytest.raises(DatasetUnavailableError, match="class names"):
        load_trec(str(tmp_path))


def test_many_shot_files_load_locally(tmp_path):
    row = {
        "input": "Question: Why ?\nType:",
        "context": "Question: Who ?\nType: Individual",
        "answers": ["Reason"],
        "all_classes": list(FINE_LABELS),
        "length": 9,
        "dataset": "trec",
        "language": "en",
        "_id": "x",
    }
    (tmp_path / "trec_5shots.jsonl").write_text(json.dumps(row) + "\n")
    (rows,) = [load_manyshot_rows(5, str(tmp_path))]
    assert rows[0]["answers"] == ["Reason"] and rows[0]["input"].endswith("Type:")
    with pytest.raises(DatasetUnavailableError, match="no 7-shot file"):
        load_manyshot_rows(7, str(tmp_path))


def test_options_parse_with_prefix_and_reject_unknown():
    options = parse_task_options(TrecOptions, {"trec_shots": "[10, 1]", "trec_seed": 3, "fc_x": 1}, OPTION_PREFIX)
    assert options.shots == (1, 10) and options.shot_counts == [1, 10] and options.seed == 3
    with pytest.raises(TaskOptionError, match="trec_data_dir"):
        parse_task_options(TrecOptions, {"trec_shot": 1}, OPTION_PREFIX)
    with pytest.raises(TaskOptionError, match="1000"):
        TrecOptions(source="manyshots", shots=(3,)).validate()


def test_demonstrations_are_nested_and_test_questions_shared(trec_dir):
    buckets = build_buckets(TrecOptions(shots=(1, 10, 50), questions=5, seed=4, data_dir=str(trec_dir)))
    assert [b.shots for b in buckets] == [1, 10, 50]
    prefixes = [b.items[0].prefix for b in buckets]
    assert prefixes[2].startswith(prefixes[1]) and prefixes[1].startswith(prefixes[0])
    assert [p.count("\nType: ") for p in prefixes] == [1, 10, 50]
    for bucket in buckets:
        assert len({item.prefix for item in bucket.items}) == 1  # one shared prefix per shot count
        assert [item.query for item in bucket.items] == [item.query for item in buckets[0].items]
    train_labels = {longbench_label(key) for _, key in TRAIN}
    assert all(line.split("Type: ")[1] in train_labels for line in prefixes[2].split("\n") if "Type: " in line)
    again = build_buckets(TrecOptions(shots=(10,), questions=5, seed=4, data_dir=str(trec_dir)))
    other = build_buckets(TrecOptions(shots=(10,), questions=5, seed=5, data_dir=str(trec_dir)))
    assert again[0].items == buckets[1].items and other[0].items != buckets[1].items


@pytest.fixture(scope="module")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def test_shot_counts_that_do_not_fit_are_dropped_by_default_and_an_error_when_explicit(
    trec_dir, tiny_tokenizer, caplog
):
    budget = PromptBudget(tiny_tokenizer, context_length=600, generated=64)
    default = TrecOptions(questions=4, data_dir=str(trec_dir))
    with caplog.at_level(logging.WARNING):
        kept, sizes = fitting_buckets(build_buckets(default), budget, explicit=False)
    assert [b.shots for b in kept] == [1, 5, 10, 25] and "[50] shots need" in caplog.text
    assert all(sizes[b.shots] <= 600 - 64 for b in kept) and sizes[50] > 600 - 64
    exact = max(budget.tokens(item.prompt) for item in kept[-1].items)
    assert sizes[25] == exact  # the size is the longest real prompt, not an estimate
    with pytest.raises(TaskOptionError, match="Largest tested shot count that fits: 10"):
        fitting_buckets(build_buckets(TrecOptions(shots=(10, 50), questions=4, data_dir=str(trec_dir))), budget, True)


def test_too_many_shots_for_the_train_split(trec_dir):
    with pytest.raises(TaskOptionError, match="TREC train has 56"):
        build_buckets(TrecOptions(shots=(100,), data_dir=str(trec_dir)))


def test_the_written_sample_runs_offline_as_the_local_copies_of_it_do(trec_dir):
    """trec_source=sample: the shipped questions, with no data to fetch, give exactly the prompts
    the same questions give as CogComp/trec files."""
    from lm_eval_longmem.tasks.dataset_needs import needed

    sample = build_buckets(TrecOptions(shots=(1, 8), questions=10, source="sample"))
    local = build_buckets(TrecOptions(shots=(1, 8), questions=10, data_dir=str(trec_dir)))
    assert [(b.shots, b.items) for b in sample] == [(b.shots, b.items) for b in local]
    assert needed(["longmem_trec_manyshot"], {"trec_source": "sample"}) == {}
    assert "trec" in needed(["longmem_trec_manyshot"], {})
    with pytest.raises(TaskOptionError, match="trec_source=sample reads the questions shipped"):
        TrecOptions(source="sample", data_dir=str(trec_dir)).validate()

"""The `longmem` group: its YAML, and the real group run through the stock CLI on a tiny model.

Offline, the TREC, TopicRet and BookSum members read fixture files in the real datasets'
schemas (`trec_data_dir`, `topicret_data`, `bs_data`); everything else is the group's own per-member defaults,
overridden only where the tiny model needs it.
"""

from pathlib import Path

import pytest
import yaml

from lm_eval_longmem.tasks import TASKS_DIR
from tests.helpers.cli_runs import BIN, results_of, run
from tests.helpers.group_members import member_options
from tests.helpers.tiny_llama import build_tiny_model

GROUP_YAML = Path(TASKS_DIR) / "longmem" / "longmem.yaml"
MEMBERS = [
    "forgetting_curve",
    "longmem_passkey",
    "longmem_trec_manyshot",
    "longmem_topicret",
    "longmem_perplexity",
    "longmem_booksum",
]


@pytest.fixture(scope="module")
def group_model(tmp_path_factory):
    """The tiny Llama with room for a few TREC demonstrations and a TopicRet record."""
    return build_tiny_model(tmp_path_factory.mktemp("tiny_llama_group"), max_position_embeddings=1024)


def member_name(entry) -> str:
    return entry if isinstance(entry, str) else entry["task"]


def load_group() -> dict:
    return yaml.safe_load(GROUP_YAML.read_text())


def test_group_lists_every_task_and_aggregates_nothing():
    group = load_group()
    assert group["group"] == "longmem"
    assert sorted(member_name(t) for t in group["task"]) == sorted(MEMBERS)
    assert "aggregate_metric_list" not in group  # per-length metrics come from subsets: no size-weighted means


def test_group_defaults_are_small():
    (fc,) = [t for t in load_group()["task"] if member_name(t) == "forgetting_curve"]
    assert fc["metadata"]["fc_points"] * fc["metadata"]["fc_samples"] <= 12 and fc["metadata"]["fc_max_length"] <= 1024


def test_group_runs_through_the_stock_cli(group_model, corpus_file, tmp_path):
    options = member_options(corpus_file, tmp_path)
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={group_model}",
            "--tasks",
            "longmem",
            "--metadata",
            *(arg for args in options.values() for arg in args),
            "--gen_kwargs",
            "max_gen_toks=4",
            "--output_path",
            str(out),
        ]
    )
    results = results_of(out)
    assert set(results["group_subtasks"]["longmem"]) == set(MEMBERS)
    assert set(MEMBERS) <= set(results["results"])
    # fc_points=4 comes from the group's metadata, fc_max_length=40 from --metadata (the CLI wins)
    protocol = results["configs"]["forgetting_curve"]["metadata"]["protocol"]
    assert protocol["lengths"] == [8, 18, 29, 40] and protocol["samples"] == 2
    assert results["results"]["longmem_passkey"]["grid,none"]["num_samples"] == [[1, 1], [1, 1]]
    trec = results["results"]["longmem_trec_manyshot"]
    assert {"acc@0001shots,none", "acc@0005shots,none"} <= set(trec)
    assert results["configs"]["longmem_trec_manyshot"]["metadata"]["protocol"]["questions_per_shot_count"] == [2, 2]
    topicret = results["results"]["longmem_topicret"]
    assert {"first_topic_acc,none", "mean_acc,none"} <= set(topicret) and topicret["skipped_documents,none"] == 0
    # ppl_points=3 and ppl_windows=2 from the group's metadata
    assert {"ppl@0256,none", "ppl@0512,none", "ppl@1024,none"} <= set(results["results"]["longmem_perplexity"])
    # bs_lengths and bs_books from the group's metadata: 2 fables (shorter than both budgets) x 2 budgets
    booksum = results["results"]["longmem_booksum"]
    assert [(p["budget"], p["books"]) for p in booksum["rouge_by_length,none"]["points"]] == [(1024, 2), (4096, 2)]
    assert booksum["cut_books@len1024,none"] == 0


def test_group_perplexity_defaults_are_small():
    (ppl,) = [t for t in load_group()["task"] if member_name(t) == "longmem_perplexity"]
    assert (
        ppl["metadata"]["ppl_max_length"] <= 1024
        and ppl["metadata"]["ppl_points"] * ppl["metadata"]["ppl_windows"] <= 6
    )


def test_group_booksum_defaults_are_small():
    (booksum,) = [t for t in load_group()["task"] if member_name(t) == "longmem_booksum"]
    assert max(booksum["metadata"]["bs_lengths"]) <= 4096 and booksum["metadata"]["bs_books"] <= 2


def test_group_trec_defaults_are_small():
    (trec,) = [t for t in load_group()["task"] if member_name(t) == "longmem_trec_manyshot"]
    assert max(trec["metadata"]["trec_shots"]) <= 50 and trec["metadata"]["trec_questions"] <= 25

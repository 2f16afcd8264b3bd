"""The `longmem` group: its YAML, and a run through the stock CLI on the tiny model.

The group lists all four long-memory tasks. The subprocess test runs the members that can
run offline on the tiny model with the options below (`RUNNABLE`); it builds a copy of the
real group YAML restricted to them, so the group's own per-member defaults are what it
tests. To cover another member, add its name and the --metadata it needs with a tiny model
(e.g. fixture data paths) to RUNNABLE.
"""

from pathlib import Path

import yaml

from lm_eval_longmem.tasks import TASKS_DIR
from test_cli_end_to_end import BIN, results_of, run

GROUP_YAML = Path(TASKS_DIR) / "longmem" / "longmem.yaml"
MEMBERS = ["forgetting_curve", "longmem_passkey", "longmem_trec_manyshot", "longmem_topicret"]


def runnable(corpus_file):
    """member -> the --metadata it needs on the tiny model (128 tokens) offline."""
    return {
        "forgetting_curve": [f"fc_corpus={corpus_file}", "fc_max_length=40", "fc_samples=2"],
        "longmem_passkey": ["pk_lengths=[64,96]", "pk_depths=[0,100]", "pk_samples=1"],
    }


def member_name(entry) -> str:
    return entry if isinstance(entry, str) else entry["task"]


def load_group() -> dict:
    return yaml.safe_load(GROUP_YAML.read_text())


def test_group_lists_all_four_tasks_and_aggregates_nothing():
    group = load_group()
    assert group["group"] == "longmem"
    assert sorted(member_name(t) for t in group["task"]) == sorted(MEMBERS)
    assert "aggregate_metric_list" not in group  # per-length metrics come from subsets: no size-weighted means


def test_group_defaults_are_small():
    (fc,) = [t for t in load_group()["task"] if member_name(t) == "forgetting_curve"]
    assert fc["metadata"]["fc_points"] * fc["metadata"]["fc_samples"] <= 12 and fc["metadata"]["fc_max_length"] <= 1024


def test_group_runs_through_the_stock_cli(tiny_model_dir, corpus_file, tmp_path):
    options = runnable(corpus_file)
    group = load_group()
    group["group"] = "longmem_runnable_members"
    group["task"] = [t for t in group["task"] if member_name(t) in options]
    include = tmp_path / "include"
    include.mkdir()
    (include / "longmem_runnable_members.yaml").write_text(yaml.safe_dump(group))
    out = tmp_path / "out"
    run([str(BIN / "lm_eval"), "--model", "longmem", "--model_args", f"pretrained={tiny_model_dir}",
         "--tasks", "longmem_runnable_members", "--include_path", str(include),
         "--metadata", *(arg for args in options.values() for arg in args), "--output_path", str(out)])
    results = results_of(out)
    assert set(options) <= set(results["results"])
    # fc_points=4 comes from the group's metadata, fc_max_length=40 from --metadata (the CLI wins)
    protocol = results["configs"]["forgetting_curve"]["metadata"]["protocol"]
    assert protocol["lengths"] == [8, 18, 29, 40] and protocol["samples"] == 2
    assert results["results"]["longmem_passkey"]["grid,none"]["num_samples"] == [[1, 1], [1, 1]]
    assert set(results["group_subtasks"]["longmem_runnable_members"]) == set(options)

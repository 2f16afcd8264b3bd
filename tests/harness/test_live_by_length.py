"""The per-bin keys a `--model longmem` run writes (harness/live_by_length.py): which tasks get
them, the keys and numbers from known per-document metrics, and how the leaderboard reads them.
The whole path through the `lm_eval` command is in tests/e2e/test_overlength_and_by_length.py."""

import argparse

import pytest

from lm_eval_longmem.common.bootstrap import bootstrap_interval
from lm_eval_longmem.harness import preflight
from lm_eval_longmem.harness.live_by_length import (
    FLOOR,
    ByLengthSettingError,
    TaskListener,
    chosen,
    parse_setting,
    per_bin_entries,
)
from lm_eval_longmem.report.headlines import headlines_of


@pytest.mark.parametrize(
    ("given", "setting"),
    [(None, "auto"), ("auto", "auto"), ("ON", "on"), ("off", "off"), (True, "on"), (False, "off"), ("false", "off")],
)
def test_the_setting_reads_auto_on_off_and_booleans(given, setting):
    assert parse_setting(given) == setting


def test_an_unknown_setting_is_one_line_naming_the_choices_at_start_up():
    with pytest.raises(ByLengthSettingError, match=r"by_length=sometimes: unknown setting; valid: auto, on, off"):
        parse_setting("sometimes")
    args = argparse.Namespace(model="longmem", model_args={"by_length": "sometimes"}, tasks=None, metadata=None)
    with pytest.raises(ByLengthSettingError):
        preflight.check(args)


def test_auto_keeps_lm_evals_tasks_keys_on_takes_every_task_off_none():
    ours = {"longmem_passkey"}
    assert chosen("auto", "longmem_passkey", ours) and not chosen("auto", "longbench_qasper", ours)
    assert chosen("on", "longbench_qasper", ours)
    assert not chosen("off", "longmem_passkey", ours)


def test_entries_are_power_of_two_bins_with_mean_count_and_an_interval_from_the_floor_up():
    long_scores = [1.0, 0.0] * FLOOR  # 2 * FLOOR documents in [512, 1k): an interval
    samples = [("none", 600 + i, {"acc": score, "pred": "text"}) for i, score in enumerate(long_scores)]
    samples += [("none", 40, {"acc": 1.0}), ("none", 50, {"acc": 0.0}), ("none", 33, {"acc": True})]  # [32, 64)
    samples += [("strict", 40, {"acc": 0.0, "acc@depth050": 0.0})]  # another filter keeps its own keys
    entries = per_bin_entries(samples)
    assert entries["acc@len512-1k,none"] == pytest.approx(0.5)
    assert entries["acc@len512-1k_n,none"] == 2 * FLOOR
    assert entries["acc@len512-1k_ci,none"] == list(bootstrap_interval(long_scores))
    assert entries["acc@len32-64,none"] == pytest.approx(2 / 3) and entries["acc@len32-64_n,none"] == 3
    assert "acc@len32-64_ci,none" not in entries  # under the floor: no interval
    assert entries["acc@len32-64,strict"] == 0.0
    assert not [key for key in entries if key.startswith("pred")]  # not a number: not averaged
    assert not [key for key in entries if "depth" in key]  # a metric the task already splits
    assert not [key for key in entries if "64-128" in key or "128-256" in key]  # empty bins: no keys


def test_the_leaderboard_shows_each_bin_mean_as_a_column_after_the_tasks_own():
    results = {
        "longbench_qasper": {
            "f1,none": 0.4,
            "f1@len1k-2k,none": 0.5,
            "f1@len1k-2k_n,none": 12,
            "f1@len512-1k,none": 0.3,
        }
    }
    results["longbench_qasper"]["f1@len1k-2k_ci,none"] = [0.2, 0.8]
    names = [(h.column.name, h.value) for h in headlines_of(results)["longbench_qasper"]]
    assert sorted(names, key=lambda n: n[0]) == sorted(
        [("longbench_qasper:f1", 0.4), ("longbench_qasper:f1@len512-1k", 0.3), ("longbench_qasper:f1@len1k-2k", 0.5)]
    )
    columns = sorted(headlines_of(results)["longbench_qasper"], key=lambda h: h.column.order)
    assert [h.column.name.split(":")[1] for h in columns] == ["f1", "f1@len512-1k", "f1@len1k-2k"]


def test_passkeys_own_per_length_metric_is_not_taken_for_a_bin():
    results = {"longmem_passkey": {"acc@len64,none": 0.5, "acc@len96,none": 0.0, "acc,none": 0.25}}
    names = {h.column.name for h in headlines_of(results)["longmem_passkey"]}
    assert not [name for name in names if "longmem_passkey:" in name]


def test_only_metrics_lm_eval_averages_are_binned():
    from lm_eval.api.metrics import mean

    class Counted:  # trec_manyshot's shape: a mean and a count of skipped shot counts
        def aggregation(self):
            return {"acc": mean, "skipped_shot_counts": lambda values: len(values)}

    class Silent:
        def aggregation(self):
            raise NotImplementedError

    assert TaskListener(Counted()).averaged() == {"acc"}
    assert TaskListener(Silent()).averaged() is None

"""`overlength=` and `by-length` on real lm-eval task code, offline: a LongBench-format task
folder (tests/helpers/longbench_fixture.py: a qasper-like generation task and a longbench2-like
multiple-choice task, grouped, read by lm-eval's own `json` builder via --include_path) through
the stock `lm_eval` command on the tiny Llama (128 tokens). Each run is a subprocess (~15-25 s
on 2 shared cores)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from lm_eval_longmem.cli import main
from tests.helpers.cli_runs import BIN, results_of, run, two_cpu_processes
from tests.helpers.longbench_fixture import write_longbench_fixture
from tests.helpers.tiny_llama import build_tiny_model

# context words; the prompts add ~25 (generation) and ~50 (multiple choice) tokens
SHORT = [4, 6, 10, 14, 20, 28, 36, 44, 56, 70]  # every input fits 128 tokens
LONG = [10, 30, 60, 100, 150, 220, 300, 420]  # the last five exceed it in both tasks


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny128"), max_position_embeddings=128)


def lm_eval(model_name, model_args, tasks_folder, out, log_samples=True, check=True, extra=()):
    args = [str(BIN / "lm_eval"), "--model", model_name, "--model_args", model_args, "--tasks", "lbfix"]
    args += ["--include_path", str(tasks_folder), "--output_path", str(out), *extra]
    return run(args + (["--log_samples"] if log_samples else []), check=check)


@pytest.fixture(scope="module")
def long_tasks(tmp_path_factory):
    return write_longbench_fixture(tmp_path_factory.mktemp("lbfix_long"), LONG)


def test_skip_scores_the_documents_that_fit_and_counts_the_rest(model, long_tasks, tmp_path):
    out = tmp_path / "skip"
    lm_eval("longmem", f"pretrained={model},method=vanilla,overlength=skip", long_tasks, out)
    results = results_of(out)
    record = results["config"]["longmem_overlength"]
    assert record["policy"] == "skip" and record["context_length"] == 128
    skipped = {task: entry["documents"] for task, entry in record["skipped"].items()}
    # babilong's prompt is the shortest: its 100-word document still fits 128 tokens
    expected = {"lbfix_qa": 5, "lbfix_mc": 5, "lbfix_babi": 4}
    assert skipped == expected, record
    for task, count in expected.items():
        assert sum(record["skipped"][task]["by_length"].values()) == count
        assert results["n-samples"][task] == {"original": len(LONG), "effective": len(LONG) - count}
        (samples,) = out.rglob(f"samples_{task}_*.jsonl")
        logged = [json.loads(line) for line in samples.read_text().splitlines()]
        assert sorted(s["doc_id"] for s in logged) == list(range(len(LONG) - count))  # the metric is over these only
        for sample in logged:  # every choice of a kept document was scored
            assert all(resp[0][0] != float("-inf") for resp in sample["resps"])


@pytest.mark.slow  # two lm_eval processes under accelerate (gloo): ~1 min on 2 cores
def test_two_processes_count_every_processs_skipped_and_cut_documents(model, long_tasks, tmp_path):
    """Each process scores its share of the documents and only rank 0 writes the results: the
    counts must be the whole run's, as with one process."""
    prefix, env = two_cpu_processes(29681, "lm_eval")
    for policy, key in (("skip", "skipped"), ("middle", "cut")):
        out = tmp_path / policy
        args = ["--model", "longmem", "--model_args", f"pretrained={model},method=vanilla,overlength={policy}"]
        args += ["--tasks", "lbfix", "--include_path", str(long_tasks), "--output_path", str(out)]
        run([*prefix, *args], env_extra=env)
        record = results_of(out)["config"]["longmem_overlength"][key]
        if policy == "skip":
            assert {task: entry["documents"] for task, entry in record.items()} == {
                "lbfix_qa": 5,
                "lbfix_mc": 5,
                "lbfix_babi": 4,
            }
        else:
            assert {task: entry["requests"] for task, entry in record.items()} == {
                "lbfix_qa": 5,
                "lbfix_mc": 20,
                "lbfix_babi": 4,
            }


def test_middle_cuts_what_is_too_long_and_says_by_how_much_also_from_the_cache(model, long_tasks, tmp_path):
    """The second run answers every request from --use_cache, never reaching the model: the
    counts come from the cached answers and must equal the first run's."""
    records = []
    for attempt in ("first", "cached"):
        out = tmp_path / attempt
        model_args = f"pretrained={model},method=vanilla,overlength=middle"
        lm_eval("longmem", model_args, long_tasks, out, log_samples=False, extra=["--use_cache", str(tmp_path / "db")])
        results = results_of(out)
        records.append(results["config"]["longmem_overlength"]["cut"])
        assert results["n-samples"]["lbfix_mc"]["effective"] == len(LONG)
    cut, cached = records
    assert cut["lbfix_qa"]["requests"] == 5 and cut["lbfix_mc"]["requests"] == 5 * 4  # every choice
    assert cut["lbfix_babi"]["requests"] == 4
    assert all(entry["tokens_cut"] > 0 for entry in cut.values())
    assert cached == cut


def test_refuse_stops_with_todays_message(model, long_tasks, tmp_path):
    proc = lm_eval("longmem", f"pretrained={model},method=vanilla", long_tasks, tmp_path / "r", False, check=False)
    assert proc.returncode == 2
    assert "longer than the 128 tokens this model takes with method=vanilla" in proc.stderr or (
        "more than the 128 tokens this model takes with method=vanilla" in proc.stderr
    )
    assert "so longmem refuses" in proc.stderr and "Traceback" not in proc.stderr


def test_hf_and_longmem_vanilla_agree_bin_by_bin(model, tmp_path, capsys):
    tasks = write_longbench_fixture(tmp_path / "lbfix_short", SHORT)
    lm_eval("hf", f"pretrained={model}", tasks, tmp_path / "hf")
    lm_eval("longmem", f"pretrained={model},method=vanilla", tasks, tmp_path / "longmem")
    table = tmp_path / "bins.csv"
    assert (
        main(["by-length", str(tmp_path / "hf"), str(tmp_path / "longmem"), "--min-samples", "2", "--csv", str(table)])
        == 0
    )
    printed = capsys.readouterr().out
    assert "### lbfix · acc,none" in printed and "### lbfix_qa · exact_match,none" in printed
    rows = list(csv.DictReader(io.StringIO(table.read_text())))
    runs = sorted({row["run"] for row in rows})
    assert len(runs) == 2 and any("hf" in r for r in runs) and any("vanilla" in r for r in runs)
    by_run = {run: {(r["task"], r["metric"], r["bin"]): r for r in rows if r["run"] == run} for run in runs}
    assert set(by_run[runs[0]]) == set(by_run[runs[1]])
    assert {key[0] for key in by_run[runs[0]]} == {"lbfix", "lbfix_qa", "lbfix_mc", "lbfix_babi"}
    for key, theirs in by_run[runs[0]].items():
        ours = by_run[runs[1]][key]
        assert (ours["count"], ours["mean"], ours["ci_low"], ours["ci_high"]) == (
            theirs["count"],
            theirs["mean"],
            theirs["ci_low"],
            theirs["ci_high"],
        ), key
    group = [r for r in by_run[runs[0]].values() if r["task"] == "lbfix" and r["metric"] == "acc,none"]
    # the group's acc pools its two tasks that report acc: the multiple-choice and the babilong one
    assert sum(int(r["count"]) for r in group) == 2 * len(SHORT)
    for folder in ("hf", "longmem"):  # by_length=auto: lm-eval's (and --include_path) tasks keep their keys
        assert not [
            key for entry in results_of(tmp_path / folder)["results"].values() for key in entry if "@len" in key
        ]


def test_by_length_on_writes_the_by_length_report_into_the_results(model, tmp_path, capsys):
    """One `--model longmem ... by_length=on` run: its results hold per-bin keys equal to what
    `lm-eval-longmem by-length` computes from the same run's --log_samples files."""
    tasks = write_longbench_fixture(tmp_path / "lbfix_short", SHORT)
    out = tmp_path / "live"
    lm_eval("longmem", f"pretrained={model},method=vanilla,by_length=on", tasks, out)
    results = results_of(out)["results"]
    table = tmp_path / "bins.csv"
    assert main(["by-length", str(out), "--min-samples", "1", "--csv", str(table)]) == 0
    capsys.readouterr()
    offline = [r for r in csv.DictReader(io.StringIO(table.read_text())) if r["task"] != "lbfix"]
    assert {r["task"] for r in offline} == {"lbfix_qa", "lbfix_mc", "lbfix_babi"}
    for row in offline:  # "acc,none" in bin "64-128" -> "acc@len64-128,none"
        metric, _, filter_key = row["metric"].partition(",")
        key = f"{metric}@len{row['bin']},{filter_key}"
        assert results[row["task"]][key] == pytest.approx(float(row["mean"])), key
        assert results[row["task"]][f"{metric}@len{row['bin']}_n,{filter_key}"] == int(row["count"])
    live = {
        (task, key)
        for task, entry in results.items()
        for key in entry
        if "@len" in key and "_" not in key.split("@")[1]
    }
    assert len(live) == len(offline)  # no bin the offline report lacks
    assert "acc,none" in results["lbfix_mc"]  # lm-eval's own keys stay
    assert main(["leaderboard", str(out), "--sort", "lbfix_mc:acc@len64-128", "--format", "csv"]) == 0
    (header, row) = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    shown = dict(zip(header, row))
    assert shown["arguments"] == ""  # by_length= changes no score: not part of the run's identity
    assert float(shown["lbfix_mc:acc@len64-128"]) == pytest.approx(results["lbfix_mc"]["acc@len64-128,none"], abs=1e-3)
    assert not [column for column in header if column.endswith(("_n", "_ci"))]  # counts stay in the file

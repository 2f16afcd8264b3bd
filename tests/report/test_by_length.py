"""`lm-eval-longmem by-length` on output folders whose samples files lm-eval's own
`EvaluationTracker` wrote (so the file format is lm-eval 0.4.13's), over the tiny Llama's
word-level tokenizer (one token per word). e2e/test_overlength_and_by_length.py reads real runs."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from lm_eval_longmem.cli import main
from lm_eval_longmem.common.bootstrap import BootstrapSettings, bootstrap_interval
from lm_eval_longmem.common.length_bins import (
    BinsError,
    LengthBin,
    bins_from_edges,
    length_text,
    power_of_two_bins,
    quantile_bins,
)

DATE = "2026-11-29T01-02-03.000001"


def write_run(folder, tiny_model_dir, tasks: dict, model="hf", groups=None, log_samples=True):
    """An lm-eval output folder: `tasks` maps a task to [(words, {metric: value}), ...] and the
    request kind ("generate_until" or "loglikelihood" with continuations " yes" and " no")."""
    from lm_eval.loggers import EvaluationTracker

    folder.mkdir(parents=True, exist_ok=True)
    results = {
        "results": {task: {"alias": task} for task in tasks},
        "group_subtasks": groups or {},
        "config": {"model": model, "model_args": f"pretrained={tiny_model_dir}"},
        "date": 1.0,
    }
    (folder / f"results_{DATE}.json").write_text(json.dumps(results))
    if not log_samples:
        return folder
    tracker = EvaluationTracker(output_path=str(folder) + "/results.json")  # a .json path: files go beside it
    tracker.date_id = DATE
    for task, (kind, rows) in tasks.items():
        samples = []
        for doc_id, (words, metrics) in enumerate(rows):
            context = " ".join(["the"] * words)
            if kind == "loglikelihood":
                arguments = [(context, " yes"), (context, " no")]
            else:
                arguments = [(context, {"until": ["."], "max_gen_toks": 4})]
            sample = {
                "doc_id": doc_id,
                "doc": {},
                "target": "x",
                "arguments": arguments,
                "resps": [],
                "filtered_resps": [],
            }
            sample.update({"filter": "none", "metrics": list(metrics), **metrics})
            samples.append(sample)
        tracker.save_results_samples(task, samples)
    return folder


def test_lengths_are_written_as_papers_write_them():
    assert [length_text(n) for n in (100, 1024, 1536, 4096, 2**20)] == ["100", "1k", "1.5k", "4k", "1m"]
    assert [b.label for b in bins_from_edges("0,4k,8k")] == ["0-4k", "4k-8k", "8k+"]


def test_power_of_two_bins_cover_every_length_once():
    bins = power_of_two_bins([3, 9, 100])
    assert [(b.low, b.high) for b in bins] == [(2, 4), (4, 8), (8, 16), (16, 32), (32, 64), (64, 128)]
    for length in (3, 9, 100):
        assert sum(b.holds(length) for b in bins) == 1


def test_quantile_bins_split_samples_evenly():
    lengths = list(range(1, 101))
    bins = quantile_bins(lengths, 4)
    assert [sum(b.holds(n) for n in lengths) for b in bins] == [25, 25, 25, 25]
    assert math.isinf(bins[-1].high)


@pytest.mark.parametrize("text", ["0,8k,4k", "4k,4k", "1,x", ""])
def test_bad_bins_are_refused(text):
    with pytest.raises(BinsError):
        bins_from_edges(text)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = [0, 1, 1, 0, 1, 1, 1, 0, 1, 1]
    first = bootstrap_interval(values, BootstrapSettings(seed=3))
    assert first == bootstrap_interval(values, BootstrapSettings(seed=3))
    assert first[0] < 0.7 < first[1]
    narrower = bootstrap_interval(values, BootstrapSettings(level=0.5, seed=3))
    assert first[0] <= narrower[0] <= narrower[1] <= first[1]
    assert bootstrap_interval([0.5, 0.5]) == (0.5, 0.5)


def test_report_bins_metrics_pools_groups_and_lists_what_it_leaves_out(tmp_path, tiny_model_dir, capsys):
    qa = [(10, {"score": 1.0})] * 3 + [(40, {"score": 0.0})] * 3 + [(40, {"score": "n/a"})]
    mc = [(12, {"acc": 1, "acc_norm": 1})] * 2 + [(50, {"acc": 0, "acc_norm": 1})] * 4
    free = [(20, {"bleu": [0.1, 0.2]})]
    tasks = {"qa": ("generate_until", qa), "mc": ("loglikelihood", mc), "free": ("generate_until", free)}
    out = write_run(tmp_path / "run", tiny_model_dir, tasks, groups={"suite": ["qa", "mc"]})
    csv_path, json_path = tmp_path / "t.csv", tmp_path / "t.json"
    args = [
        "by-length",
        str(out),
        "--bins",
        "0,32",
        "--min-samples",
        "3",
        "--csv",
        str(csv_path),
        "--json",
        str(json_path),
    ]
    assert main(args) == 0
    text = capsys.readouterr().out
    rows = {(r["task"], r["metric"], r["bin"]): r for r in csv.DictReader(io.StringIO(csv_path.read_text()))}
    # qa: "the" x words plus nothing else: 10 and 40 tokens
    assert rows[("qa", "score,none", "0-32")]["mean"] == "1.0"
    assert rows[("qa", "score,none", "32+")]["count"] == "3"
    # mc: the continuation's token counts too (12 + 1 = 13, 50 + 1 = 51); 2 samples is under the floor
    assert rows[("mc", "acc,none", "0-32")]["mean"] == "" and rows[("mc", "acc,none", "0-32")]["count"] == "2"
    assert float(rows[("mc", "acc,none", "32+")]["mean"]) == 0.0
    # the group pools qa and mc: acc from mc only, score from qa only
    assert rows[("suite", "score,none", "0-32")]["count"] == "3"
    assert rows[("suite", "acc,none", "32+")]["count"] == "4"
    assert "qa · score,none: 1 sample(s) whose value is not a number, left out (doc_id 6)" in text
    assert "free logs no numeric per-sample metric" in text
    assert "bleu,none" not in text  # no sample has it as a number: a summary, not worth a note of its own
    document = json.loads(json_path.read_text())
    assert document["interval"] == {
        "method": "percentile bootstrap of the mean",
        "level": 0.95,
        "resamples": 1000,
        "seed": 0,
    }
    assert {"run": document["runs"][0], "task": "free"} in document["without_numeric_metric"]


def test_two_runs_side_by_side_in_one_table(tmp_path, tiny_model_dir, capsys):
    rows_a = [(10, {"acc": 1})] * 4
    rows_b = [(10, {"acc": 0})] * 4
    a = write_run(tmp_path / "a", tiny_model_dir, {"t": ("generate_until", rows_a)}, model="hf")
    b = write_run(tmp_path / "b", tiny_model_dir, {"t": ("generate_until", rows_b)}, model="vllm")
    assert main(["by-length", str(a), str(b), "--min-samples", "2"]) == 0
    table = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| 8-16")]
    assert table == ["| 8-16 | 1.000 [1.000, 1.000] n=4 | 0.000 [0.000, 0.000] n=4 |"]


def test_plot_is_written(tmp_path, tiny_model_dir, capsys):
    rows = [(words, {"acc": words % 3 == 0}) for words in range(4, 70)]
    out = write_run(tmp_path / "run", tiny_model_dir, {"t": ("generate_until", rows)})
    plot = tmp_path / "by_length.png"
    assert main(["by-length", str(out), "--plot", str(plot), "--quantiles", "3"]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"wrote {plot}" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--bins", "0,8k,4k"], "the edges must increase"),
        (["--tokenizer", "/no/such/tokenizer"], "cannot load the tokenizer '/no/such/tokenizer': no such folder"),
        (["--quantiles", "0"], "give a number of bins of 1 or more"),
    ],
)
def test_bad_input_is_one_line(tmp_path, tiny_model_dir, capsys, extra, expected):
    out = write_run(tmp_path / "run", tiny_model_dir, {"t": ("generate_until", [(5, {"acc": 1})])})
    with pytest.raises(SystemExit) as exit_info:
        main(["by-length", str(out), *extra])
    assert exit_info.value.code == 2
    error = capsys.readouterr().err.strip()
    assert expected in error and "\n" not in error


def test_a_folder_without_samples_names_log_samples(tmp_path, tiny_model_dir, capsys):
    out = write_run(tmp_path / "run", tiny_model_dir, {"t": ("generate_until", [])}, log_samples=False)
    for path, expected in ((out, "rerun lm_eval with --log_samples"), (tmp_path / "nope", "No such results folder")):
        with pytest.raises(SystemExit) as exit_info:
            main(["by-length", str(path)])
        assert exit_info.value.code == 2
        assert expected in capsys.readouterr().err


def test_a_longmem_run_of_the_default_model_counts_with_its_tokenizer(tmp_path, tiny_model_dir):
    from lm_eval_longmem.report.input_lengths import DEFAULT_TOKENIZER, tokenizer_source
    from lm_eval_longmem.report.logged_samples import read_logged_runs

    out = write_run(tmp_path / "run", tiny_model_dir, {"t": ("generate_until", [(5, {"acc": 1})])}, model="longmem")
    results = next(out.glob("results_*.json"))
    data = json.loads(results.read_text())
    data["config"]["model_args"] = "method=vanilla"
    results.write_text(json.dumps(data))
    (run,) = read_logged_runs([out])
    assert tokenizer_source(run) == DEFAULT_TOKENIZER
    assert tokenizer_source(run, "gpt2") == "gpt2"
    assert LengthBin(0, 4).label == "0-4"


def test_top_level_help_lists_by_length(capsys):
    assert main(["--help"]) == 0
    assert "\n  by-length " in capsys.readouterr().out
    with pytest.raises(SystemExit) as stopped:
        main(["by-length", "--help"])
    assert stopped.value.code == 0 and "usage: lm-eval-longmem by-length" in capsys.readouterr().out


def test_nothing_numeric_to_plot_is_said_not_drawn(tmp_path, tiny_model_dir):
    from lm_eval_longmem.errors import ResultsFileError

    out = write_run(tmp_path / "run", tiny_model_dir, {"t": ("generate_until", [(5, {"bleu": [1, 2]})])})
    with pytest.raises(ResultsFileError, match="Nothing to plot"):
        main(["by-length", str(out), "--plot", str(tmp_path / "p.png")])


def test_metrics_option_keeps_the_named_ones_and_refuses_an_unknown_one(tmp_path, tiny_model_dir, capsys):
    rows = [(words, {"acc": 1, "f1": 0.5}) for words in (5, 6, 20, 21)]
    out = write_run(tmp_path / "run", tiny_model_dir, {"t": ("generate_until", rows)})
    assert main(["by-length", str(out), "--metrics", "f1", "--min-samples", "2"]) == 0
    printed = capsys.readouterr().out
    assert "### t · f1,none" in printed and "acc" not in printed
    with pytest.raises(SystemExit) as exit_info:
        main(["by-length", str(out), "--metrics", "f2"])
    assert exit_info.value.code == 2
    assert "--metrics: no task logs f2; metrics there are: acc, f1" in capsys.readouterr().err


def test_the_plot_draws_only_what_has_a_line(tmp_path, tiny_model_dir, capsys):
    rows = [(words, {"acc": 1}) for words in (5, 6, 20, 21)] + [(words, {"rare": 1}) for words in (5, 6)]
    out = write_run(tmp_path / "run", tiny_model_dir, {"t": ("generate_until", rows)})
    assert main(["by-length", str(out), "--min-samples", "2", "--plot", str(tmp_path / "p.png")]) == 0
    assert "(1 task/metric tables not drawn" in capsys.readouterr().out  # `rare` has one bin with a mean

"""`lm-eval-longmem leaderboard` on results files shaped exactly as lm-eval 0.4.13 writes them.

`lm_eval_results` (tests/helpers/results_files.py) builds the JSON a real `lm_eval --model
longmem|hf ... --output_path` run writes, so these tests need no model;
e2e/test_report_of_a_real_run.py reads a file from a real run.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from lm_eval_longmem.cli import main
from lm_eval_longmem.cli.leaderboard import main as leaderboard_main
from lm_eval_longmem.errors import LongMemError, ResultsFileError
from lm_eval_longmem.report.discovery import collect_runs
from lm_eval_longmem.report.headlines import headlines_of
from lm_eval_longmem.report.leaderboard import UnknownColumnError, build_leaderboard, sort_leaderboard
from lm_eval_longmem.report.runs import describe_run
from lm_eval_longmem.tasks.headlines import bucketed
from tests.helpers.cli_runs import BIN, run
from tests.helpers.results_files import (
    forgetting_metrics,
    lm_eval_results,
    passkey_metrics,
    perplexity_metrics,
    reduced_forgetting_metrics,
    table_rows,
    topicret_metrics,
    trec_metrics,
    write,
)


@pytest.fixture
def two_methods(tmp_path) -> Path:
    """vanilla (fc + passkey + trec + topicret + ppl) and yarn factor=4 (fc + passkey), two output folders."""
    root = tmp_path / "runs"
    write(
        root / "vanilla" / "SmolLM2" / "results_2026-11-23T10-00-00.000001.json",
        lm_eval_results(
            {
                "forgetting_curve": forgetting_metrics([64, 512, 4096], [1.0, 0.9, 0.3], fine=64, coarse=512),
                "longmem_passkey": passkey_metrics({512: 1.0, 1024: 0.5}),
                "longmem_trec_manyshot": trec_metrics({1: 0.2, 10: 0.4, 100: 0.6}),
                "longmem_topicret": topicret_metrics(1.0, 0.5, 0.0),
                "longmem_perplexity": perplexity_metrics({512: 20.5, 16384: 35.25}),
            }
        ),
    )
    write(
        root / "yarn" / "SmolLM2" / "results_2026-11-23T11-00-00.000001.json",
        lm_eval_results(
            {
                "forgetting_curve": forgetting_metrics(
                    [64, 512, 4096], [1.0, 1.0, 1.0], fine=4096, coarse=4096, fine_bound=True, coarse_bound=True
                ),
                "longmem_passkey": passkey_metrics({512: 1.0, 1024: 1.0}),
            },
            method="yarn",
            method_args={"factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0},
            model_args="method=yarn,factor=4",
        ),
    )
    return root


# --- headline extraction ---------------------------------------------------------------------


def test_buckets_are_parsed_to_numbers_whatever_their_padding():
    metrics = {
        "acc@len0512,none": 0.5,
        "acc@len0512_stderr,none": 0.1,
        "acc@len4096,none": 1.0,
        "acc@len4096_stderr,none": "N/A",
        "acc@depth000,none": 0.0,
        "acc,none": 0.7,
    }
    assert bucketed(metrics, "acc@len") == {512: (0.5, 0.1), 4096: (1.0, None)}
    assert bucketed({"acc@0010shots,none": 0.25, "acc@0001shots,none": 0.0}, "acc@", "shots") == {
        1: (0.0, None),
        10: (0.25, None),
    }


def test_headlines_of_every_task():
    found = headlines_of(
        {
            "forgetting_curve": forgetting_metrics([8, 40], [1.0, 1.0], fine=40, coarse=40, fine_bound=True),
            "longmem_passkey": passkey_metrics({64: 0.5, 96: 0.0}),
            "longmem_trec_manyshot": trec_metrics({1: 0.1, 5: 0.3}),
            "longmem_topicret": topicret_metrics(1.0, 0.0, 0.5),
            "longmem_perplexity": perplexity_metrics({1024: 12.0}),
            "hellaswag": {"acc,none": 0.3},
        }
    )
    names = {task: [(h.column.name, h.value) for h in headlines] for task, headlines in found.items()}
    assert names["forgetting_curve"] == [("fc_fine", 40), ("fc_coarse", 40)]
    assert [h.lower_bound for h in found["forgetting_curve"]] == [True, False]
    assert names["longmem_passkey"] == [("passkey@64", 0.5), ("passkey@96", 0.0), ("passkey_all", 0.25)]
    assert names["longmem_trec_manyshot"] == [
        ("trec@1shots", 0.1),
        ("trec@5shots", 0.3),
        ("trec_all", pytest.approx(0.2)),
    ]
    assert names["longmem_topicret"] == [
        ("topicret_first", 1.0),
        ("topicret_second", 0.0),
        ("topicret_third", 0.5),
        ("topicret_mean", 0.5),
    ]
    assert names["longmem_perplexity"] == [("ppl@1024", 12.0)]
    assert not found["longmem_perplexity"][0].column.higher_is_better
    assert names["hellaswag"] == [("hellaswag:acc", 0.3)] and list(found)[-1] == "hellaswag"  # others after ours


def test_reduced_forgetting_curve_and_absent_perplexity_give_no_numbers():
    reduced = {"curve,none": {"mode": "reduced", "points": []}, "copy_exact@40,none": 1.0}
    assert headlines_of({"forgetting_curve": reduced, "longmem_perplexity": {"alias": "longmem_perplexity"}}) == {}


def test_model_hf_runs_are_on_the_board_with_their_exact_copy_length(two_methods, capsys):
    """`--model hf` gets the reduced forgetting curve (no memory lengths): its row shows
    `fc_exact_copy`, ">" when the longest length still passes; a run whose every length was cut
    by the model is skipped saying so."""
    hf = dict(model="hf", pretrained="HuggingFaceTB/SmolLM2-135M")
    write(
        two_methods / "hf" / "a" / "results_2026-11-23T12-00-00.json",
        lm_eval_results(
            {"forgetting_curve": reduced_forgetting_metrics({8: 1.0, 24: 1.0, 40: 0.5})},
            model_args="pretrained=HuggingFaceTB/SmolLM2-135M",
            **hf,
        ),
    )
    write(
        two_methods / "hf" / "b" / "results_2026-11-23T12-00-00.json",
        lm_eval_results(
            {"forgetting_curve": reduced_forgetting_metrics({8: 1.0, 24: 1.0})},
            model_args="pretrained=HuggingFaceTB/SmolLM2-135M,max_length=64",
            **hf,
        ),
    )
    cut = write(
        two_methods / "hf" / "c" / "results_2026-11-23T12-00-00.json",
        lm_eval_results(
            {"forgetting_curve": reduced_forgetting_metrics({}, cut=(512, 1024))},
            model_args="pretrained=HuggingFaceTB/SmolLM2-135M,max_length=128",
            **hf,
        ),
    )
    assert main(["leaderboard", str(two_methods), "--sort", "fc_exact_copy"]) == 0
    captured = capsys.readouterr()
    rows = table_rows(captured.out)
    assert [(r["method"], r["arguments"], r["fc_exact_copy"], r["fc_fine"]) for r in rows[:2]] == [
        ("hf", "max_length=64", ">24", ""),
        ("hf", "", "24", ""),
    ]
    assert len(rows) == 4 and all(r["fc_exact_copy"] == "" for r in rows[2:])  # longmem rows: fine/coarse instead
    (warning,) = captured.err.splitlines()
    assert str(cut) in warning and "no tested length gave numbers: 2 length(s) with status cut_by_model" in warning


# --- who ran -----------------------------------------------------------------------------------


def test_run_identity_uses_resolved_arguments_and_labels_show_the_chosen_ones(tmp_path):
    args = {"factor": 4.0, "beta_fast": 32.0}
    typed = describe_run(
        lm_eval_results({}, method="yarn", method_args=args, model_args={"method": "yarn", "factor": 4}),
        tmp_path / "a.json",
    )
    text = describe_run(
        lm_eval_results(
            {}, method="yarn", method_args=args, model_args="method=yarn,factor=4.0,device=cuda:0,batch_size=8"
        ),
        tmp_path / "b.json",
    )
    assert typed.identity == text.identity  # same run: spelling and placement do not matter
    assert typed.label == "SmolLM2-135M-Instruct · yarn (factor=4)"
    assert text.arguments == {"factor": "4"}
    other = describe_run(
        lm_eval_results({}, method="yarn", method_args={"factor": 8.0, "beta_fast": 32.0}), tmp_path / "c.json"
    )
    assert other.identity != typed.identity

    hf = describe_run(
        lm_eval_results(
            {}, model="hf", model_args="pretrained=/ckpt/run7/export,max_length=1024", pretrained="/ckpt/run7/export"
        ),
        tmp_path / "d.json",
    )
    assert (hf.model, hf.method, hf.arguments_text) == ("/ckpt/run7/export", "hf", "max_length=1024")
    assert hf.short_label == "run7/export · hf (max_length=1024)"  # a generic folder keeps its parent


# --- the table ----------------------------------------------------------------------------------


def test_markdown_table_has_one_row_per_run_and_each_tasks_numbers(two_methods, capsys):
    assert main(["leaderboard", str(two_methods)]) == 0
    out = capsys.readouterr().out
    rows = table_rows(out)
    assert [(r["model"], r["method"], r["arguments"]) for r in rows] == [
        ("SmolLM2-135M-Instruct", "vanilla", ""),
        ("SmolLM2-135M-Instruct", "yarn", "factor=4"),
    ]
    vanilla, yarn = rows
    assert list(vanilla) == [
        "model",
        "method",
        "arguments",
        "samples",
        "fc_fine",
        "fc_coarse",
        "passkey@512",
        "passkey@1024",
        "passkey_all",
        "trec@1shots",
        "trec@10shots",
        "trec@100shots",
        "trec_all",
        "topicret_first",
        "topicret_second",
        "topicret_third",
        "topicret_mean",
        "ppl@512",
        "ppl@16384",
    ]
    assert (vanilla["fc_fine"], vanilla["fc_coarse"], yarn["fc_fine"], yarn["fc_coarse"]) == (
        "64",
        "512",
        ">4096",
        ">4096",
    )
    assert (vanilla["passkey@1024"], vanilla["passkey_all"], yarn["passkey@1024"]) == ("0.500", "0.750", "1.000")
    assert (vanilla["trec@10shots"], vanilla["topicret_mean"], vanilla["ppl@16384"]) == ("0.400", "0.500", "35.25")
    assert yarn["trec@10shots"] == yarn["ppl@512"] == ""  # not evaluated: blank, not zero


def test_a_run_split_over_files_is_one_row_and_the_newest_file_wins_per_task(two_methods, capsys):
    folder = two_methods / "yarn" / "SmolLM2"
    # a later passkey-only evaluation of the same run, and a later TREC evaluation
    write(
        folder / "results_2026-11-24T09-00-00.000001.json",
        lm_eval_results(
            {"longmem_passkey": passkey_metrics({512: 0.0, 2048: 0.0})},
            method="yarn",
            method_args={"factor": 4, "beta_fast": 32, "beta_slow": 1},
            model_args={"method": "yarn", "factor": "4"},
            date=1795500000.0,
        ),
    )
    write(
        folder / "results_2026-11-24T10-00-00.000001.json",
        lm_eval_results(
            {"longmem_trec_manyshot": trec_metrics({10: 0.9})},
            method="yarn",
            method_args={"factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0},
            model_args="method=yarn,factor=4",
            date=1795510000.0,
        ),
    )
    board = build_leaderboard(collect_runs([two_methods]).runs)
    (yarn,) = [row for row in board.rows if row.run.method == "yarn"]
    assert yarn.value("fc_fine") == 4096  # kept from the first file
    assert yarn.value("passkey@512") == 0.0 and yarn.value("passkey@2048") == 0.0
    assert yarn.value("passkey@1024") is None  # the newer passkey file replaces the whole task
    assert yarn.value("trec@10shots") == 0.9 and len(yarn.sources) == 3

    assert main(["leaderboard", str(two_methods), "--all"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert len(rows) == 4 and [r["date"] for r in rows if r["method"] == "yarn"] == [
        "2026-11-23 18:29:25",
        "2026-11-24 06:00:00",
        "2026-11-24 08:46:40",
    ]


def test_sort_puts_the_best_first_and_blanks_last(two_methods, capsys):
    assert main(["leaderboard", str(two_methods), "--sort", "passkey_all"]) == 0
    assert [r["method"] for r in table_rows(capsys.readouterr().out)] == ["yarn", "vanilla"]
    board = build_leaderboard(collect_runs([two_methods]).runs)
    assert [r.run.method for r in sort_leaderboard(board, "ppl@512").rows] == [
        "vanilla",
        "yarn",
    ]  # yarn has no ppl: last
    assert [r.run.method for r in sort_leaderboard(board, "fc_fine", ascending=True).rows] == ["vanilla", "yarn"]
    assert [r.run.method for r in sort_leaderboard(board, "method").rows] == ["vanilla", "yarn"]


def test_csv_and_json_keep_full_numbers(two_methods, tmp_path, capsys):
    assert main(["leaderboard", str(two_methods), "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert rows[0]["ppl@16384"] == "35.25" and rows[1]["fc_fine"] == ">4096" and rows[1]["trec_all"] == ""

    out = tmp_path / "tables" / "board.json"
    assert main(["leaderboard", str(two_methods), "--format", "json", "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["columns"][:3] == ["model", "method", "arguments"]
    vanilla, yarn = data["rows"]
    assert yarn["arguments"] == {"factor": "4"} and yarn["lower_bounds"] == ["fc_fine", "fc_coarse"]
    assert vanilla["values"]["trec@1shots"] == 0.2 and "trec@1shots" not in vanilla["stderr"]  # "N/A" stderr
    assert vanilla["stderr"]["trec@10shots"] == 0.08 and vanilla["sources"][0].endswith(".json")


def test_builtin_long_tasks_beside_ours_get_a_column_per_metric_in_their_direction(two_methods, capsys):
    """RULER and LongBench run next to our tasks (one lm_eval call or another): their numbers join
    the same row, after our columns, and sort in the direction the file records."""
    ruler = {
        "niah_single_1": {
            "alias": "niah_single_1",
            "4096,none": 0.96,
            "4096_stderr,none": "N/A",
            "8192,none": 0.5,
            "8192_stderr,none": "N/A",
        },
        "longbench_qasper": {"alias": "longbench_qasper", "qa_f1_score,none": 0.25, "qa_f1_score_stderr,none": 0.02},
        "toy_error_rate": {"alias": "toy_error_rate", "wer,none": 0.3},
    }
    data = lm_eval_results(
        ruler,
        method="yarn",
        method_args={"factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0},
        model_args="method=yarn,factor=4",
        date=1795460000.0,
    )
    data["higher_is_better"] = {
        "niah_single_1": {"4096": True, "8192": True},
        "longbench_qasper": {"qa_f1_score": True},
        "toy_error_rate": {"wer": False},
    }
    write(two_methods / "yarn" / "SmolLM2" / "results_2026-11-23T12-00-00.000001.json", data)
    write(
        two_methods / "vanilla" / "SmolLM2" / "results_2026-11-23T12-30-00.000001.json",
        lm_eval_results({"toy_error_rate": {"alias": "toy_error_rate", "wer,none": 0.1}}, date=1795460100.0),
    )

    board = build_leaderboard(collect_runs([two_methods]).runs)
    names = board.column_names
    ours_last = max(names.index(n) for n in names if n.startswith(("fc_", "passkey", "trec", "topicret", "ppl")))
    theirs = [n for n in names if ":" in n]
    assert theirs == ["longbench_qasper:qa_f1_score", "niah_single_1:4096", "niah_single_1:8192", "toy_error_rate:wer"]
    assert min(names.index(n) for n in theirs) > ours_last
    yarn = next(row for row in board.rows if row.run.method == "yarn")
    assert yarn.value("niah_single_1:8192") == 0.5 and yarn.value("passkey@1024") == 1.0  # one row, both files
    by_error = sort_leaderboard(board, "toy_error_rate:wer")  # lower is better, as the file says
    assert [row.run.method for row in by_error.rows] == ["vanilla", "yarn"]
    assert main(["leaderboard", str(two_methods), "--sort", "niah_single_1:8192"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows[0]["method"] == "yarn" and rows[0]["niah_single_1:8192"] == "0.500"


def test_results_written_for_an_output_path_ending_in_json_are_found_in_their_folder(tmp_path, capsys):
    """`lm_eval --output_path mine.json` writes `mine_<date>.json` beside it: no `results_` prefix."""
    write(
        tmp_path / "mine_2026-11-29T05-27-03.102190.json",
        lm_eval_results({"longmem_passkey": passkey_metrics({128: 1.0})}),
    )
    write(tmp_path / "notes_2026.json", {"not": "results"})  # other JSON files are not read
    assert main(["leaderboard", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert [row["passkey@128"] for row in table_rows(captured.out)] == ["1.000"] and captured.err == ""


def test_a_predict_only_file_is_skipped_saying_why_it_has_no_numbers(two_methods, capsys):
    predicted = {"longmem_passkey": {"alias": "longmem_passkey", "bypass,none": 999, "bypass_stderr,none": "N/A"}}
    write(two_methods / "p" / "results_2026-11-23T15-00-00.json", lm_eval_results(predicted))
    assert main(["leaderboard", str(two_methods)]) == 0
    assert "a --predict_only run computes no metrics" in capsys.readouterr().err


# --- bad input ------------------------------------------------------------------------------------


def test_a_corrupt_or_foreign_file_is_skipped_with_a_warning_naming_it(two_methods, capsys):
    corrupt = write(two_methods / "broken" / "results_2026-11-23T12-00-00.json", '{"results": {"forgetting_')
    foreign = write(two_methods / "other" / "results_2026-11-23T13-00-00.json", {"leaderboard": [1, 2]})
    numberless = write(
        two_methods / "hs" / "results_2026-11-23T14-00-00.json",
        lm_eval_results({"hellaswag": {"alias": "hellaswag"}}, method="vanilla"),
    )
    assert main(["leaderboard", str(two_methods)]) == 0
    captured = capsys.readouterr()
    assert len(table_rows(captured.out)) == 2
    warnings = captured.err.splitlines()
    assert len(warnings) == 3 and all(line.startswith("warning: skipped ") for line in warnings)
    for path, reason in (
        (corrupt, "not a readable lm-eval results file"),
        (foreign, "no 'results' mapping"),
        (numberless, "no numeric results (tasks present: hellaswag)"),
    ):
        assert any(str(path) in line and reason in line for line in warnings), captured.err


@pytest.mark.parametrize("case", ["missing folder", "no results files", "only corrupt files", "no numbers"])
def test_nothing_to_tabulate_is_one_clear_error(tmp_path, case):
    if case == "missing folder":
        target, expected = tmp_path / "nowhere", "No such results file or directory"
    elif case == "no results files":
        write(tmp_path / "out" / "samples_forgetting_curve.jsonl", "")
        target, expected = tmp_path / "out", "No lm-eval results files (results_*.json) found"
    elif case == "only corrupt files":
        write(tmp_path / "out" / "results_1.json", "not json")
        target, expected = tmp_path / "out", "No readable lm-eval results"
    else:
        write(tmp_path / "out" / "results_1.json", lm_eval_results({"piqa": {"alias": "piqa"}}))
        target, expected = tmp_path / "out", "None of the results files has numeric results of any task"
    with pytest.raises(ResultsFileError, match=expected.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        leaderboard_main([str(target)])  # the subcommand itself: `lm-eval-longmem` answers with the message


def test_unknown_sort_column_lists_the_valid_ones(two_methods):
    with pytest.raises(UnknownColumnError) as caught:
        leaderboard_main([str(two_methods), "--sort", "passkey"])
    message = str(caught.value)
    assert isinstance(caught.value, LongMemError)
    assert "Unknown column 'passkey'" in message and "passkey_all" in message and "fc_fine" in message


def test_console_script_prints_one_message_without_traceback(two_methods, tmp_path):
    leaderboard = [str(BIN / "lm-eval-longmem"), "leaderboard"]
    for args, expected in (
        ([str(tmp_path / "nowhere")], "No such results file or directory"),
        ([str(two_methods), "--sort", "bogus"], "Valid columns: model, method, arguments"),
    ):
        proc = run([*leaderboard, *args], check=False)
        assert proc.returncode == 2 and expected in proc.stderr, proc.stderr  # a path or column typed wrong
        assert "Traceback" not in proc.stderr and proc.stderr.count("error:") == 1
    proc = run([*leaderboard, str(two_methods), "--sort", "trec_all"])
    assert "| SmolLM2-135M-Instruct | vanilla |" in proc.stdout and proc.stderr == ""


def test_top_level_help_lists_the_report_subcommands_and_each_has_its_own_help(capsys):
    assert main(["--help"]) == 0
    listing = capsys.readouterr().out
    for name in ("leaderboard", "plot", "plot-passkey", "plot-trec", "plot-perplexity"):
        assert f"\n  {name} " in listing
    for name in ("leaderboard", "plot-trec", "plot-perplexity"):
        with pytest.raises(SystemExit) as stopped:
            main([name, "--help"])
        assert stopped.value.code == 0 and f"usage: lm-eval-longmem {name}" in capsys.readouterr().out

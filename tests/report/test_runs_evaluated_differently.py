"""Files of one model + method + arguments evaluated differently (--limit, a task's --metadata,
the chat template) are different rows of the leaderboard and different lines of a plot, with
their sample counts and the settings that differ shown; files evaluated alike still merge."""

import pytest

from lm_eval_longmem.cli import main
from lm_eval_longmem.report.discovery import collect_runs, runs_with_task
from lm_eval_longmem.report.leaderboard import build_leaderboard
from tests.helpers.results_files import forgetting_metrics, lm_eval_results, passkey_metrics, table_rows, write


def _passkey(date, samples, limit=None, metadata=None, chat_template=None):
    data = lm_eval_results({"longmem_passkey": passkey_metrics({512: samples / 8})}, date=date)
    data["config"]["limit"] = limit
    data["configs"]["longmem_passkey"]["metadata"].update(metadata or {})
    data["n-samples"]["longmem_passkey"] = {"original": 6, "effective": samples}
    data["chat_template"] = chat_template
    data["chat_template_sha"] = None if chat_template is None else "1f2e3d4c5b6a"
    return data


def test_a_newer_smaller_run_no_longer_hides_an_older_one(tmp_path, capsys):
    write(tmp_path / "a" / "results_2026-11-23T10-00-00.json", _passkey(1795458000.0, 6, metadata={"pk_samples": 6}))
    write(tmp_path / "b" / "results_2026-11-23T11-00-00.json", _passkey(1795459000.0, 1, limit=1.0))
    forgetting = lm_eval_results({"forgetting_curve": forgetting_metrics([64], [1.0], 64, 64)}, date=1795460000.0)
    write(tmp_path / "c" / "results_2026-11-23T12-00-00.json", forgetting)  # no --limit either: joins a's row

    assert main(["leaderboard", str(tmp_path)]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert len(rows) == 2
    full, one = sorted(rows, key=lambda row: row["passkey@512"], reverse=True)
    assert (full["samples"], one["samples"]) == ("forgetting_curve:8, longmem_passkey:6", "1")
    assert full["settings"] == "limit=none, pk_samples=6" and full["fc_fine"] == "64"
    assert one["settings"] == "limit=1, pk_samples=default" and one["fc_fine"] == ""

    board = build_leaderboard(collect_runs([tmp_path / "a", tmp_path / "c"]).runs)
    (row,) = board.rows  # same settings: one row, both tasks
    assert row.value("fc_fine") == 64 and row.value("passkey@512") == 0.75 and "settings" not in board.column_names


def test_plots_keep_both_runs_and_label_what_differs(tmp_path):
    write(tmp_path / "a" / "results_2026-11-23T10-00-00.json", _passkey(1795458000.0, 6, chat_template="{{x}}"))
    write(tmp_path / "b" / "results_2026-11-23T11-00-00.json", _passkey(1795459000.0, 6))
    runs = runs_with_task([tmp_path], "longmem_passkey")
    assert sorted(run.variant for run in runs) == [
        "vanilla [chat_template=off]",
        "vanilla [chat_template=on (1f2e3d4c)]",
    ]


def test_ascending_without_sort_is_a_wrong_command_line(tmp_path, capsys):
    write(tmp_path / "a" / "results_2026-11-23T10-00-00.json", _passkey(1795458000.0, 6))
    with pytest.raises(SystemExit) as stopped:
        main(["leaderboard", str(tmp_path), "--ascending"])
    assert stopped.value.code == 2 and "add --sort COLUMN" in capsys.readouterr().err

"""BookSum in the reports: `plot-booksum` (overall Rouge against the input budget, one line per
run, hollow points where the model's context cut books) and its leaderboard columns."""

from __future__ import annotations

import pytest

from lm_eval_longmem.cli import main
from lm_eval_longmem.errors import ResultsFileError
from lm_eval_longmem.report.headlines import headlines_of
from tests.helpers.results_files import booksum_metrics, lm_eval_results, passkey_metrics, write


@pytest.fixture
def booksum_runs(tmp_path):
    root = tmp_path / "out"
    write(
        root / "a" / "results_2026-11-26T10-00-00.json",
        lm_eval_results({"longmem_booksum": booksum_metrics({16384: 14.0, 65536: 14.5}, cut={65536: 17})}),
    )
    write(
        root / "b" / "results_2026-11-26T11-00-00.json",
        lm_eval_results(
            {"longmem_booksum": booksum_metrics({16384: 15.0, 65536: 16.5, 500000: 18.0})},
            method="infini",
            method_args={"segment_length": 2048},
            model_args="method=infini,segment_length=2048",
        ),
    )
    return root


def test_plot_booksum_draws_overall_rouge_by_budget_per_run(booksum_runs, tmp_path, saved, capsys):
    out = tmp_path / "booksum.png"
    assert main(["plot-booksum", str(booksum_runs), "-o", str(out)]) == 0
    (fig,) = saved
    (ax,) = fig.axes
    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()}
    assert lines == {
        "vanilla": ([16384, 65536], [14.0, 14.5]),
        "infini (segment_length=2048)": ([16384, 65536, 500000], [15.0, 16.5, 18.0]),
    }
    ((hollow,),) = [c.get_offsets().tolist() for c in ax.collections]  # only vanilla's 64K point was cut
    assert hollow == [65536, 14.5]
    assert ax.get_xscale() == "log" and "budget" in ax.get_xlabel() and "overall Rouge" in ax.get_ylabel()
    printed = capsys.readouterr().out
    assert "vanilla: 16384: 14.0, 65536: 14.5 (cut)" in printed


def test_plot_booksum_without_booksum_results_is_one_clear_error(tmp_path):
    write(tmp_path / "results_1.json", lm_eval_results({"longmem_passkey": passkey_metrics({64: 1.0})}))
    with pytest.raises(ResultsFileError, match="longmem_booksum"):
        main(["plot-booksum", str(tmp_path), "-o", str(tmp_path / "b.png")])


def test_leaderboard_columns_are_overall_rouge_per_budget(booksum_runs, capsys):
    found = headlines_of({"longmem_booksum": booksum_metrics({16384: 14.04, 500000: 18.0})})
    assert [(h.column.name, h.value) for h in found["longmem_booksum"]] == [
        ("booksum@16384", 14.04),
        ("booksum@500000", 18.0),
    ]
    assert main(["leaderboard", str(booksum_runs)]) == 0
    board = capsys.readouterr().out
    assert "booksum@16384" in board and "booksum@500000" in board and "16.5" in board and "14.0" in board

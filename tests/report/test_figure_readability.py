"""Figures a reader can read: log-spaced lengths on a log axis (and `--help` says when), copy
and LM curves both visible where they coincide, passkey panels wrapped into a grid of
readable cells, and a lower bound written ">L" in every format (text, Markdown, CSV, JSON,
figure titles). Figures are captured just before they are saved (tests/helpers/figures.py)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from lm_eval_longmem.cli import main
from lm_eval_longmem.report.figures import DPI, log_spaced
from tests.helpers.results_files import forgetting_metrics, lm_eval_results, passkey_metrics, write


@pytest.mark.parametrize(
    "lengths, expected",
    [
        ([32, 64, 128, 256, 512, 1024], True),  # geometric, 32x: was linear under the old 50x rule
        ([10, 20, 40], True),  # geometric, only 4x
        ([8, 512, 1024, 4096], True),  # spans >= 8x
        ([8, 24, 40], False),  # linear, 5x
        ([100, 300, 500, 700], False),  # linear, 7x
        ([512, 1024], False),  # two lengths: no spacing to read
    ],
)
def test_log_spaced_lengths_are_recognised(lengths, expected):
    assert log_spaced(lengths) is expected


def test_plot_draws_log_spaced_lengths_on_a_log_axis_and_help_says_when(tmp_path, saved, capsys):
    write(
        tmp_path / "out" / "results_1.json",
        lm_eval_results(
            {
                "forgetting_curve": forgetting_metrics(
                    [32, 64, 128, 256, 512, 1024], [1.0, 1.0, 0.9, 0.5, 0.3, 0.2], fine=64, coarse=512
                )
            }
        ),
    )
    assert main(["plot", str(tmp_path / "out"), "-o", str(tmp_path / "fc.png")]) == 0
    assert saved[0].axes[0].get_xscale() == "log"
    assert main(["plot", str(tmp_path / "out"), "-o", str(tmp_path / "fc.png"), "--linear-x"]) == 0
    assert saved[1].axes[0].get_xscale() == "linear"
    with pytest.raises(SystemExit):
        main(["plot", "--help"])
    assert "log-spaced: they span 8x or more, or each is a roughly constant factor > 1.5" in " ".join(
        capsys.readouterr().out.split()
    )


@pytest.mark.parametrize("overlay", [False, True], ids=["panels", "overlay"])
def test_the_copy_line_stays_visible_where_it_equals_the_lm_line(tmp_path, saved, overlay):
    data = lm_eval_results({"forgetting_curve": forgetting_metrics([8, 24, 40], [0.2, 0.2, 0.2], fine=0, coarse=0)})
    write(tmp_path / "out" / "results_1.json", data)  # copy == LM == 0.2 at every length
    assert (
        main(["plot", str(tmp_path / "out"), "-o", str(tmp_path / "fc.png"), *(["--overlay"] if overlay else [])]) == 0
    )
    ax = saved[0].axes[0]
    lines = {line.get_label().split(": ")[-1].split(",")[0]: line for line in ax.get_lines()}
    copy = lines["copy accuracy" if not overlay else "copy"]
    lm = lines["LM accuracy" if not overlay else "LM"]
    assert list(copy.get_ydata()) == list(lm.get_ydata())
    assert copy.get_zorder() > lm.get_zorder()  # copy drawn over LM
    assert (copy.get_linestyle(), copy.get_marker()) != (lm.get_linestyle(), lm.get_marker())
    assert lm.get_markerfacecolor() == "none" and lm.get_markersize() > copy.get_markersize()  # LM frames copy's dots


def test_five_passkey_runs_wrap_into_a_grid_of_readable_cells(tmp_path, saved):
    for index, method in enumerate(("vanilla", "yarn", "pi", "ntk", "streamingllm")):
        write(
            tmp_path / "out" / method / "results_1.json",
            lm_eval_results(
                {"longmem_passkey": passkey_metrics({512: 1.0, 1024: 0.5, 2048: 0.25, 4096: 0.0})},
                method=method,
                method_args={"factor": float(index + 2)},
                model_args=f"method={method},factor={index + 2}",
            ),
        )
    assert main(["plot-passkey", str(tmp_path / "out"), "-o", str(tmp_path / "pk.png")]) == 0
    (fig,) = saved
    panels = [ax for ax in fig.axes if ax.get_images()]
    assert len(panels) == 5
    renderer = fig.test_renderer
    boxes = [ax.get_window_extent(renderer) for ax in panels]
    columns, rows = {round(box.x0) for box in boxes}, {round(box.y0) for box in boxes}
    assert len(columns) <= 3 and len(rows) == 2  # 3 + 2, not one strip of five
    assert fig.get_figwidth() * DPI <= 2200
    for ax, box in zip(panels, boxes):
        cell_width = box.width / 4  # four lengths per panel
        assert cell_width >= 0.6 * DPI  # at least 0.6 inch of figure per cell
        for text in ax.texts:  # every annotation fits inside its cell
            assert text.get_window_extent(renderer).width < cell_width


def test_a_lower_bound_stays_a_lower_bound_in_every_format(tmp_path, saved, capsys):
    write(
        tmp_path / "out" / "results_1.json",
        lm_eval_results(
            {
                "forgetting_curve": forgetting_metrics(
                    [64, 128, 256], [1.0, 1.0, 0.9], fine=128, coarse=256, coarse_bound=True
                )
            }
        ),
    )
    out = str(tmp_path / "out")
    capsys.readouterr()
    assert main(["plot", out, "-o", str(tmp_path / "fc.png")]) == 0
    printed = capsys.readouterr().out
    assert "fine 128, coarse >256" in printed  # the text line says what the title says
    assert "coarse >256" in saved[0].axes[0].get_title()
    assert main(["leaderboard", out]) == 0
    assert "| 128 | >256 |" in capsys.readouterr().out
    assert main(["leaderboard", out, "--format", "csv"]) == 0
    (row,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert (row["fc_fine"], row["fc_coarse"]) == ("128", ">256")
    assert main(["leaderboard", out, "--format", "json"]) == 0
    (record,) = json.loads(capsys.readouterr().out)["rows"]
    assert record["values"]["fc_coarse"] == 256 and record["lower_bounds"] == ["fc_coarse"]

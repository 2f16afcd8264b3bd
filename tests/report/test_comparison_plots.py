"""Comparison figures: TREC accuracy vs shots, perplexity vs length (+ loss by position), the
forgetting-curve overlay, and what every plot shares (format by suffix, wrapped titles, bands
inside [0, 1], legends naming method and arguments).

Figures are captured just before they are saved, so the tests read the drawn data, titles and
legends rather than trusting that a file was written.
"""

from __future__ import annotations

import pytest

from lm_eval_longmem.cli import main
from lm_eval_longmem.errors import LongMemError, ResultsFileError
from lm_eval_longmem.report.figures import FigureOutputError, check_output, legend_labels, wrap
from tests.helpers.figures import legend_texts
from tests.helpers.results_files import (
    forgetting_metrics,
    lm_eval_results,
    passkey_metrics,
    perplexity_metrics,
    write,
)

PNG, PDF = b"\x89PNG", b"%PDF"


def bands_within(fig, low, high) -> bool:
    for ax in fig.axes:
        for collection in ax.collections:
            for path in collection.get_paths():
                ys = path.vertices[:, 1]
                if len(ys) and (ys.min() < low - 1e-9 or ys.max() > high + 1e-9):
                    return False
    return True


# --- shared machinery ----------------------------------------------------------------------


def test_output_format_follows_the_suffix():
    assert check_output("a/b.PDF").suffix == ".PDF"
    with pytest.raises(FigureOutputError, match=r"unsupported suffix '\.jpg'.*\.png, \.pdf, \.svg"):
        check_output("curve.jpg")
    assert issubclass(FigureOutputError, LongMemError)


def test_legend_labels_put_a_shared_model_in_the_title():
    assert legend_labels(["m", "m"], ["vanilla", "yarn (factor=4)"]) == (["vanilla", "yarn (factor=4)"], "m")
    assert legend_labels(["m", "n"], ["vanilla", "vanilla"]) == (["m · vanilla", "n · vanilla"], None)
    assert legend_labels(["m", "m"], ["vanilla", "vanilla"])[0] == ["vanilla", "vanilla [2]"]


def test_wrap_keeps_every_line_within_the_width():
    text = "SmolLM2-135M-Instruct · streamingllm (max_context_length=256, chunk_size=64, sink_length=4) " * 3
    lines = wrap(text, 5.0).split("\n")
    assert len(lines) > 1 and max(len(line) for line in lines) <= int(5.0 * 9.5)


# --- TREC ------------------------------------------------------------------------------------


def test_plot_trec_one_line_per_run_with_bands_inside_0_1(runs_dir, tmp_path, saved, capsys):
    out = tmp_path / "trec.png"
    assert main(["plot-trec", str(runs_dir), "-o", str(out)]) == 0
    assert out.read_bytes().startswith(PNG)
    (fig,) = saved
    (ax,) = fig.axes
    lines = {line.get_label(): (list(line.get_xdata()), list(line.get_ydata())) for line in ax.get_lines()}
    assert lines == {
        "vanilla": ([1, 10, 100], [0.05, 0.4, 0.97]),
        "yarn (factor=4)": ([1, 10, 100, 1000], [0.1, 0.5, 0.6, 0.7]),
    }
    assert legend_texts(ax) == ["vanilla", "yarn (factor=4)"]
    assert "SmolLM2-135M-Instruct" in ax.get_title()  # the shared model, once
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_xscale() == "log"
    assert bands_within(fig, 0.0, 1.0)  # 0.97 + 1.96 * 0.08 would reach 1.13 unclipped
    printed = capsys.readouterr().out
    assert "yarn (factor=4): 1: 0.100, 10: 0.500, 100: 0.600, 1000: 0.700" in printed and "wrote" in printed


def test_plot_trec_without_trec_results_is_one_clear_error(tmp_path):
    write(tmp_path / "results_1.json", lm_eval_results({"longmem_passkey": passkey_metrics({64: 1.0})}))
    with pytest.raises(ResultsFileError, match="longmem_trec_manyshot.*tasks present: longmem_passkey"):
        main(["plot-trec", str(tmp_path), "-o", str(tmp_path / "t.png")])


# --- perplexity ------------------------------------------------------------------------------


def test_plot_perplexity_with_loss_curve_panel_as_pdf(runs_dir, tmp_path, saved):
    out = tmp_path / "ppl.pdf"
    assert main(["plot-perplexity", str(runs_dir), "-o", str(out)]) == 0
    assert out.read_bytes().startswith(PDF)
    (fig,) = saved
    ppl_ax, loss_ax = fig.axes
    assert {line.get_label(): list(line.get_ydata()) for line in ppl_ax.get_lines()} == {
        "vanilla": [20.5, 35.25],
        "yarn (factor=4)": [19.0, 18.0],
    }
    assert [line.get_label() for line in loss_ax.get_lines()] == ["vanilla"]  # only vanilla has a curve
    assert legend_texts(loss_ax) == ["vanilla", "yarn (factor=4)"]  # one legend lists every run
    assert "perplexity" in ppl_ax.get_ylabel() and "loss" in loss_ax.get_ylabel()


def test_plot_perplexity_without_a_loss_curve_has_one_panel(tmp_path, saved):
    data = lm_eval_results({"longmem_perplexity": perplexity_metrics({256: 30.0, 512: 28.0}, with_curve=False)})
    data["results"]["longmem_perplexity"]["loss_curve,none"] = {"positions": [], "loss": []}  # as --model hf records it
    write(tmp_path / "out" / "results_1.json", data)
    assert main(["plot-perplexity", str(tmp_path / "out"), "-o", str(tmp_path / "p.png")]) == 0
    (fig,) = saved
    (ax,) = fig.axes
    assert legend_texts(ax) == ["vanilla"] and fig._suptitle.get_text() == "Perplexity: SmolLM2-135M-Instruct"


# --- forgetting curve and passkey, extended ----------------------------------------------------


def test_forgetting_curves_overlay_on_one_axes_with_memory_lengths_in_the_legend(runs_dir, tmp_path, saved):
    out = tmp_path / "fc.svg"
    assert main(["plot", str(runs_dir), "--overlay", "-o", str(out)]) == 0
    assert out.read_text().lstrip().startswith("<?xml")
    (fig,) = saved
    (ax,) = fig.axes
    texts = legend_texts(ax)
    assert "vanilla: copy, fine 64, coarse 512" in texts
    assert "infini (segment_length=2048): copy, fine 512, coarse >4096" in texts
    wrapped = [line for text in ax.get_legend().get_texts() for line in text.get_text().split("\n")]
    assert len(wrapped) > len(texts) and max(map(len, wrapped)) <= int(3.5 * 9.5 / 0.85)  # long entries wrap
    assert bands_within(fig, 0.0, 1.0)


def test_forgetting_curve_panels_clip_bands_and_wrap_long_titles(runs_dir, tmp_path, saved):
    long_title = "Forgetting curves of every context-extension method we evaluated on SmolLM2-135M " * 3
    assert main(["plot", str(runs_dir), "-o", str(tmp_path / "fc.png"), "--title", long_title]) == 0
    (fig,) = saved
    assert len(fig.axes) == 2 and bands_within(fig, 0.0, 1.0)
    renderer = fig.test_renderer
    suptitle = fig._suptitle
    assert "\n" in suptitle.get_text()
    assert suptitle.get_window_extent(renderer).width <= fig.bbox.width


def test_plot_passkey_as_pdf_names_each_panel_by_method(runs_dir, tmp_path, saved):
    write(
        runs_dir / "d" / "results_2026-11-23T13-00-00.json",
        lm_eval_results(
            {"longmem_passkey": passkey_metrics({512: 0.0, 1024: 0.0})},
            method="streamingllm",
            method_args={"max_context_length": 256},
            model_args="method=streamingllm,max_context_length=256",
        ),
    )
    out = tmp_path / "pk.pdf"
    assert main(["plot-passkey", str(runs_dir), "-o", str(out)]) == 0
    assert out.read_bytes().startswith(PDF)
    (fig,) = saved
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == [
        "vanilla\noverall 0.75",
        "streamingllm\n(max_context_length=256)\noverall 0.00",
    ]  # wrapped to the panel


def test_a_bad_suffix_fails_before_reading_anything(tmp_path, capsys):
    """A wrong command line: one line, exit 2, before the (missing) results are looked for."""
    with pytest.raises(SystemExit) as stopped:
        main(["plot-trec", str(tmp_path / "nowhere"), "-o", str(tmp_path / "t.jpeg")])
    assert stopped.value.code == 2 and "unsupported suffix" in capsys.readouterr().err


def test_a_run_whose_curve_cannot_be_read_is_skipped_with_a_warning(runs_dir, tmp_path, saved, capsys):
    broken = lm_eval_results(
        {"forgetting_curve": {"alias": "forgetting_curve", "fine_memory_length,none": 8}},
        method="pi",
        method_args={"factor": 2.0},
        model_args="method=pi,factor=2",
    )
    broken_file = write(runs_dir / "e" / "results_2026-11-23T14-00-00.json", broken)
    assert main(["plot", str(runs_dir), "-o", str(tmp_path / "fc.png")]) == 0
    captured = capsys.readouterr()
    assert f"warning: skipped {broken_file}: task 'forgetting_curve' has no 'curve,none' metric" in captured.err
    assert len(saved[0].axes) == 2  # vanilla and infini still drawn


@pytest.mark.parametrize("overlay", [False, True], ids=["panels", "overlay"])
def test_a_training_length_far_beyond_the_tested_lengths_is_named_not_drawn(tmp_path, saved, overlay):
    write(
        tmp_path / "out" / "results_1.json",
        lm_eval_results(
            {"forgetting_curve": forgetting_metrics([32, 64, 128, 256], [0.97, 0.94, 0.97, 0.99], fine=0, coarse=256)}
        ),
    )
    assert (
        main(["plot", str(tmp_path / "out"), "-o", str(tmp_path / "fc.png"), *(["--overlay"] if overlay else [])]) == 0
    )
    (ax,) = saved[0].axes
    assert "training length = 8192 (beyond the tested lengths)" in legend_texts(ax)
    assert ax.get_xlim()[1] < 1000  # the curve keeps the width of the plot

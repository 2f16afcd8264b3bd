"""Figures as the plot commands draw them: captured just before they are saved, so tests read the
drawn data, titles and legends rather than trusting that a file was written; and a folder of
three runs to draw. `saved` and `runs_dir` are fixtures, available to every test module through
`pytest_plugins` in tests/conftest.py (no import needed)."""

from __future__ import annotations

import pytest

from lm_eval_longmem.report import figures
from tests.helpers.results_files import (
    forgetting_metrics,
    lm_eval_results,
    passkey_metrics,
    perplexity_metrics,
    trec_metrics,
    write,
)


@pytest.fixture
def saved(monkeypatch):
    """Every figure the plot modules save, kept for inspection (they are still written)."""
    kept = []
    original = figures.save_figure

    def keep(fig, output):
        fig.canvas.draw()  # lay out text so extents can be measured
        fig.test_renderer = fig.canvas.get_renderer()  # saving closes the figure's canvas
        kept.append(fig)
        return original(fig, output)

    import lm_eval_longmem.report.booksum_plot as bs_plot
    import lm_eval_longmem.report.forgetting_curve_plot as fc_plot
    import lm_eval_longmem.report.passkey_plot as pk_plot
    import lm_eval_longmem.report.perplexity_plot as ppl_plot
    import lm_eval_longmem.report.trec_plot as trec_plot

    for module in (fc_plot, pk_plot, ppl_plot, trec_plot, bs_plot):
        monkeypatch.setattr(module, "save_figure", keep)
    return kept


@pytest.fixture
def runs_dir(tmp_path):
    """Three runs of one model: vanilla (everything), yarn factor=4 (TREC + ppl, no loss curve), infini (fc only)."""
    root = tmp_path / "out"
    write(
        root / "a" / "results_2026-11-23T10-00-00.json",
        lm_eval_results(
            {
                "forgetting_curve": forgetting_metrics([64, 512, 4096], [1.0, 0.9, 0.3], fine=64, coarse=512),
                "longmem_passkey": passkey_metrics({512: 1.0, 1024: 0.5}),
                "longmem_trec_manyshot": trec_metrics({1: 0.05, 10: 0.4, 100: 0.97}),
                "longmem_perplexity": perplexity_metrics({512: 20.5, 4096: 35.25}),
            }
        ),
    )
    write(
        root / "b" / "results_2026-11-23T11-00-00.json",
        lm_eval_results(
            {
                "longmem_trec_manyshot": trec_metrics({1: 0.1, 10: 0.5, 100: 0.6, 1000: 0.7}),
                "longmem_perplexity": perplexity_metrics({512: 19.0, 4096: 18.0}, with_curve=False),
            },
            method="yarn",
            method_args={"factor": 4.0, "beta_fast": 32.0},
            model_args="method=yarn,factor=4",
        ),
    )
    write(
        root / "c" / "results_2026-11-23T12-00-00.json",
        lm_eval_results(
            {
                "forgetting_curve": forgetting_metrics(
                    [64, 512, 4096], [1.0, 1.0, 0.95], fine=512, coarse=4096, coarse_bound=True
                ),
            },
            method="infini",
            method_args={"segment_length": 2048},
            model_args="method=infini,segment_length=2048",
        ),
    )
    return root


def legend_texts(ax) -> list[str]:
    """Legend entries with their wrapping undone."""
    return [text.get_text().replace("\n", " ") for text in ax.get_legend().get_texts()]

"""The leaderboard names a trained export by its short folder name (more folders only where two
would read alike) and writes each column in one number format, in Markdown and in CSV."""

from __future__ import annotations

import csv
import io

from lm_eval_longmem.cli import main
from lm_eval_longmem.report.runs import unambiguous_model_names
from tests.helpers.results_files import (
    forgetting_metrics,
    lm_eval_results,
    passkey_metrics,
    perplexity_metrics,
    table_rows,
    write,
)


def test_paths_shorten_to_their_folder_and_grow_only_where_two_would_clash():
    names = unambiguous_model_names(
        [
            "/work/runs/a/tiny-pi/export",
            "/work/runs/b/tiny-pi/export",
            "/data/ckpt/run7",
            "HuggingFaceTB/SmolLM2-135M",
            "/scratch/x/run8",
            "/scratch/y/run8",
        ]
    )
    assert names == {
        "/work/runs/a/tiny-pi/export": "a/tiny-pi/export",
        "/work/runs/b/tiny-pi/export": "b/tiny-pi/export",
        "/data/ckpt/run7": "run7",
        "HuggingFaceTB/SmolLM2-135M": "HuggingFaceTB/SmolLM2-135M",
        "/scratch/x/run8": "x/run8",
        "/scratch/y/run8": "y/run8",
    }


def two_exports(root):
    """Two trained exports; one file records passkey 1 and perplexity 20 as integers, the other floats."""
    write(
        root / "pi" / "results_2026-11-23T10-00-00.000001.json",
        lm_eval_results(
            {
                "forgetting_curve": forgetting_metrics([64, 512], [1.0, 0.9], fine=64, coarse=512),
                "longmem_passkey": passkey_metrics({512: 1, 1024: 0.5}),
                "longmem_perplexity": perplexity_metrics({512: 20, 16384: 12345.678}),
            },
            pretrained="/home/me/lm-eval-longmem/runs/2026-11-23/tiny-pi/export",
        ),
    )
    write(
        root / "yarn" / "results_2026-11-23T11-00-00.000001.json",
        lm_eval_results(
            {
                "forgetting_curve": forgetting_metrics([64, 512], [1.0, 1.0], fine=512, coarse=512),
                "longmem_passkey": passkey_metrics({512: 0.75, 1024: 1.0}),
                "longmem_perplexity": perplexity_metrics({512: 20.25, 16384: 35.25}),
            },
            method="yarn",
            pretrained="/home/me/lm-eval-longmem/runs/2026-11-23/tiny-yarn/export",
        ),
    )
    return root


def test_markdown_names_exports_short_and_writes_one_format_per_column(tmp_path, capsys):
    assert main(["leaderboard", str(two_exports(tmp_path / "runs"))]) == 0
    pi, yarn = table_rows(capsys.readouterr().out)
    assert (pi["model"], yarn["model"]) == ("tiny-pi/export", "tiny-yarn/export")
    assert (pi["passkey@512"], yarn["passkey@512"]) == ("1.000", "0.750")
    assert (pi["ppl@512"], yarn["ppl@512"]) == ("20.00", "20.25")
    assert (pi["ppl@16384"], yarn["ppl@16384"]) == ("12345.68", "35.25")  # not "1.235e+04" beside "35.25"


def test_csv_writes_a_column_with_any_fraction_as_floats_and_integer_columns_as_integers(tmp_path, capsys):
    assert main(["leaderboard", str(two_exports(tmp_path / "runs")), "--format", "csv"]) == 0
    pi, yarn = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert (pi["model"], yarn["model"]) == ("tiny-pi/export", "tiny-yarn/export")
    assert (pi["passkey@512"], yarn["passkey@512"]) == ("1.0", "0.75")  # the file's integer 1 is not "1"
    assert (pi["ppl@512"], yarn["ppl@512"]) == ("20.0", "20.25")
    assert (pi["fc_fine"], yarn["fc_fine"]) == ("64", "512")  # memory lengths, recorded as integers

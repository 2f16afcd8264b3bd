"""The leaderboard and the comparison plots on the results file of a real `lm_eval` run.

One real run of the `longmem` group (all its tasks) on the tiny Llama, offline with the
data fixtures, through the stock command (~20-30 s on 2 cores). A second run is derived
from its file by changing the recorded method, as a second `lm_eval` call would write it,
so the file format is lm-eval's own and only the numbers of the second row are made up.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lm_eval_longmem.cli import main
from tests.helpers.cli_runs import BIN, run
from tests.helpers.group_members import member_options
from tests.helpers.results_files import table_rows
from tests.helpers.tiny_llama import build_tiny_model


@pytest.fixture(scope="module")
def real_output(tmp_path_factory, corpus_file):
    root = tmp_path_factory.mktemp("leaderboard_real")
    model = build_tiny_model(root / "tiny_llama_1k", max_position_embeddings=1024)
    options = member_options(corpus_file, root / "data")
    out = root / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={model},method=vanilla",
            "--tasks",
            "longmem",
            "--metadata",
            *(arg for args in options.values() for arg in args),
            "--gen_kwargs",
            "max_gen_toks=4",
            "--output_path",
            str(out),
        ]
    )
    (results_file,) = out.rglob("results_*.json")
    return out, results_file, json.loads(results_file.read_text())


def test_every_tasks_headline_numbers_come_from_the_real_file(real_output, capsys):
    out, results_file, data = real_output
    assert main(["leaderboard", str(out)]) == 0
    (row,) = table_rows(capsys.readouterr().out)
    results = data["results"]
    model_folder = Path(data["config"]["longmem_pretrained"]).name  # a local checkpoint: its folder's name
    assert (row["model"], row["method"], row["arguments"]) == (model_folder, "vanilla", "")
    fc = results["forgetting_curve"]
    assert row["fc_fine"].lstrip(">") == str(fc["fine_memory_length,none"])
    assert row["fc_coarse"].lstrip(">") == str(fc["coarse_memory_length,none"])
    assert row["fc_coarse"].startswith(">") == fc["curve,none"]["coarse_is_lower_bound"]
    per_length = {
        int(m.group(1)): value
        for key, value in results["longmem_passkey"].items()
        if (m := re.fullmatch(r"acc@len(\d+),none", key))
    }
    assert sorted(per_length) == data["configs"]["longmem_passkey"]["metadata"]["protocol"]["lengths"]
    for length, value in per_length.items():
        assert row[f"passkey@{length}"] == f"{value:.3f}"
    assert row["passkey_all"] == f"{results['longmem_passkey']['acc,none']:.3f}"
    assert row["trec@1shots"] == f"{results['longmem_trec_manyshot']['acc@0001shots,none']:.3f}"
    assert row["trec@5shots"] == f"{results['longmem_trec_manyshot']['acc@0005shots,none']:.3f}"
    for which in ("first", "second", "third"):
        assert row[f"topicret_{which}"] == f"{results['longmem_topicret'][f'{which}_topic_acc,none']:.3f}"
    assert row["topicret_mean"] == f"{results['longmem_topicret']['mean_acc,none']:.3f}"
    perplexity = {
        int(m.group(1)): value
        for key, value in results.get("longmem_perplexity", {}).items()
        if (m := re.fullmatch(r"ppl@(\d+),none", key))
    }
    for length, value in perplexity.items():  # the group runs longmem_perplexity where it has it
        assert row[f"ppl@{length}"] == f"{value:.2f}"
    booksum = {
        int(m.group(1)): value
        for key, value in results["longmem_booksum"].items()
        if (m := re.fullmatch(r"overall@len(\d+),none", key))
    }
    assert sorted(booksum) == data["configs"]["longmem_booksum"]["metadata"]["protocol"]["lengths"]
    for budget, value in booksum.items():
        assert row[f"booksum@{budget}"] == f"{value:.1f}"


def test_a_second_method_beside_the_real_run_sorted_and_plotted(real_output, tmp_path, capsys):
    out, results_file, data = real_output
    other = json.loads(json.dumps(data))
    other["config"].update(
        longmem_method="statedclm",
        longmem_method_args={"max_context_length": 64, "chunk_size": 16},
        model_args={**data["config"]["model_args"], "method": "statedclm", "max_context_length": "64"},
    )
    other["results"]["longmem_passkey"]["acc,none"] = 1.0
    other["results"]["longmem_passkey"]["grid,none"]["overall"] = 1.0
    other["results"]["longmem_trec_manyshot"]["acc@0005shots,none"] = 0.5
    other_file = tmp_path / "statedclm" / results_file.parent.name / results_file.name
    other_file.parent.mkdir(parents=True)
    other_file.write_text(json.dumps(other))

    assert main(["leaderboard", str(out), str(other_file), "--sort", "passkey_all"]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert [(r["method"], r["arguments"]) for r in rows] == [("statedclm", "max_context_length=64"), ("vanilla", "")]

    commands = [("plot-trec", "trec.png"), ("plot-passkey", "passkey.pdf"), ("plot", "fc.png")]
    commands.append(("plot-booksum", "booksum.png"))
    if "longmem_perplexity" in data["results"]:
        commands.append(("plot-perplexity", "ppl.png"))
    for command, name in commands:
        target = tmp_path / name
        assert main([command, str(out), str(other_file), "-o", str(target)]) == 0
        assert target.stat().st_size > 1000
    printed = capsys.readouterr().out
    assert "statedclm (max_context_length=64): 1: " in printed  # plot-trec's summary
    assert "statedclm (max_context_length=64): overall passkey accuracy 1.000" in printed

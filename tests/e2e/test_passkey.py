"""longmem_passkey through the stock `lm_eval` command: --model longmem and --model hf."""

import json

from lm_eval_longmem.report.headlines import BIN_KEY
from tests.helpers.cli_runs import BIN, results_of, run

SMALL = ["--metadata", "pk_lengths=[64,96]", "pk_depths=[0,50,100]", "pk_samples=2", "pk_seed=1"]
CELLS = {(L, d) for L in (64, 96) for d in (0, 50, 100)}


def test_longmem_passkey_through_the_cli(tiny_model_dir, tmp_path):
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir}",
            "--tasks",
            "longmem_passkey",
            *SMALL,
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    results = results_of(out)
    metrics = results["results"]["longmem_passkey"]
    assert {
        "acc,none",
        "acc@len64,none",
        "acc@len96,none",
        "acc@depth000,none",
        "acc@depth050,none",
        "acc@depth100,none",
        "grid,none",
    } <= set(metrics)
    grid = metrics["grid,none"]
    assert grid["lengths"] == [64, 96] and grid["depths"] == [0, 50, 100] and grid["length_unit"] == "tokens"
    assert grid["num_samples"] == [[2, 2]] * 3 and grid["overall"] == metrics["acc,none"]
    (samples_file,) = out.rglob("samples_longmem_passkey_*.jsonl")
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert len(samples) == 12
    for sample in samples:  # the metric is the first-integer rule applied to the logged answer
        doc, (answer,) = sample["doc"], sample["filtered_resps"]
        digits = "".join(c if c.isdigit() else " " for c in answer).split()
        assert sample["acc"] == float(bool(digits) and int(digits[0]) == doc["key"])
    assert results["configs"]["longmem_passkey"]["metadata"]["protocol"]["seed"] == 1
    assert results["config"]["longmem_reuse_prefix"] is True
    # by_length=auto: our task gets its scores by input-length bin (harness/live_by_length.py)
    counts = {key: n for key, n in metrics.items() if BIN_KEY.match(key.split(",")[0]) and "_n," in key}
    assert counts and all(key.startswith("acc@len") for key in counts) and sum(counts.values()) == 12
    for key in counts:
        assert 0 <= metrics[key.replace("_n,", ",")] <= 1


def test_model_hf_runs_the_passkey_task_and_limit_keeps_every_cell(tiny_model_dir, tmp_path):
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_model_dir}",
            "--device",
            "cpu",
            "--tasks",
            "longmem_passkey",
            *SMALL,
            "--limit",
            "6",
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    metrics = results_of(out)["results"]["longmem_passkey"]
    assert metrics["grid,none"]["num_samples"] == [[1, 1]] * 3  # 6 documents: one per length x depth cell
    assert not [key for key in metrics if BIN_KEY.match(key.split(",")[0])]  # by_length= is longmem's
    (samples_file,) = out.rglob("samples_longmem_passkey_*.jsonl")
    cells = {
        (json.loads(s)["doc"]["length"], json.loads(s)["doc"]["depth"]) for s in samples_file.read_text().splitlines()
    }
    assert cells == CELLS

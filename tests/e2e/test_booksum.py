"""`longmem_booksum` through the stock `lm_eval` command on the fixture (test data, not BookSum):
a bounded-memory method (streamingllm) reads the fables past the tiny model's 128-token
context, with results per budget, the curve, the recorded book lengths, and no book cut; and
(slow tier) `--model hf` with the paper's sampling, whose context cuts books and counts them."""

import json

import pytest

from tests.helpers.booksum_fixture import write_booksum_fixture
from tests.helpers.cli_runs import BIN, results_of, run


def test_booksum_through_the_cli_with_a_bounded_method_past_the_context(tiny_model_dir, tmp_path):
    data = write_booksum_fixture(tmp_path / "booksum")
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir},method=streamingllm,max_context_length=24,chunk_size=8,sink_length=4",
            "--device",
            "cpu",
            "--tasks",
            "longmem_booksum",
            "--metadata",
            f"bs_data={data}",
            "bs_lengths=[16,256]",
            "bs_books=2",  # the fox (shorter than the model) and the hare (longer, two references)
            "bs_greedy=true",
            "--gen_kwargs",
            "max_gen_toks=4",
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    results = results_of(out)
    metrics = results["results"]["longmem_booksum"]
    for budget in ("len016", "len256"):
        for score in ("rouge1", "rouge2", "rougeL", "overall"):
            assert 0.0 <= metrics[f"{score}@{budget},none"] <= 100.0
        assert metrics[f"cut_books@{budget},none"] == 0  # a bounded memory reads whole budgets
    curve = metrics["rouge_by_length,none"]
    assert [p["budget"] for p in curve["points"]] == [16, 256] and [p["books"] for p in curve["points"]] == [2, 2]
    assert curve["points"][0]["references"] == 3  # the hare has two references
    protocol = results["configs"]["longmem_booksum"]["metadata"]["protocol"]
    assert protocol["bounded_memory"] is True and protocol["kept_end"] == "first"
    assert max(book["tokens"] for book in protocol["books"]) > 128  # past the tiny model's context
    (samples_file,) = out.rglob("samples_longmem_booksum_*.jsonl")
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert len(samples) == 4
    hare = next(s for s in samples if s["doc"]["book"] == 1 and s["doc"]["budget"] == 256)
    prompt = hare["arguments"]["gen_args_0"]["arg_0"]
    assert prompt.startswith("Here is the beginning of a book.\n\nA Hare one day")
    assert "Slow but steady wins the race.\n\nWrite a summary of the book above.\nSummary:" in prompt  # whole book
    assert hare["arguments"]["gen_args_0"]["arg_1"]["do_sample"] is False


@pytest.mark.slow
def test_booksum_through_model_hf_with_the_paper_s_sampling_and_context_cuts(tiny_model_dir, tmp_path):
    """lm-eval's own HFLM: plain-text prompts, the paper's sampling, and a full-attention model whose
    128 tokens cut the longer fables at the 256-token budget (counted, never silently)."""
    data = write_booksum_fixture(tmp_path / "booksum")
    out = tmp_path / "out"
    proc = run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "hf",
            "--model_args",
            f"pretrained={tiny_model_dir}",
            "--device",
            "cpu",
            "--tasks",
            "longmem_booksum",
            "--metadata",
            f"bs_data={data}",
            "bs_lengths=[16,256]",
            "--gen_kwargs",
            "max_gen_toks=4",
            "--output_path",
            str(out),
            "--log_samples",
        ]
    )
    assert "cut 2 of 3 books shorter than the budget of 256 tokens" in proc.stderr
    results = results_of(out)
    metrics = results["results"]["longmem_booksum"]
    assert metrics["cut_books@len016,none"] == 0 and metrics["cut_books@len256,none"] == 2
    (samples_file,) = out.rglob("samples_longmem_booksum_*.jsonl")
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    settings = samples[0]["arguments"]["gen_args_0"]["arg_1"]
    assert (settings["do_sample"], settings["temperature"], settings["top_p"]) == (True, 0.5, 0.95)

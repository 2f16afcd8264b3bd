"""lm-eval's `--predict_only` through the stock CLI: our tasks log their samples and score nothing,
as lm-eval's own tasks do under its `bypass` metric."""

import json

from tests.helpers.cli_runs import BIN, results_of, run
from tests.helpers.group_members import member_options

TASKS = ["forgetting_curve", "longmem_passkey", "longmem_perplexity"]


def test_predict_only_logs_samples_and_computes_no_metric(tiny_model_dir, corpus_file, tmp_path):
    options = member_options(corpus_file, tmp_path)
    out = tmp_path / "out"
    run(
        [
            str(BIN / "lm_eval"),
            "--model",
            "longmem",
            "--model_args",
            f"pretrained={tiny_model_dir}",
            "--tasks",
            ",".join(TASKS),
            "--metadata",
            *(arg for task in TASKS for arg in options[task]),
            "--predict_only",
            "--output_path",
            str(out),
        ]
    )
    results = results_of(out)
    for task in TASKS:
        metrics = set(results["results"][task]) - {"alias", "name", "sample_len"}
        assert metrics == {"bypass,none", "bypass_stderr,none"}, (task, metrics)  # e.g. no acc@len cells
        (samples_file,) = out.rglob(f"samples_{task}_*.jsonl")
        samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
        assert samples and all(sample["bypass"] is None and sample["resps"] for sample in samples)
